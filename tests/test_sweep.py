"""olakit sweep: the file is checked, grids expand, live notebooks run in parallel through papermill sharing
one cache, each distinct prompt reaches the endpoint once, and a rerun is served from the cache."""

import json
import os
from pathlib import Path

import pytest

from olakit.config import ConfigError
from olakit.errors import DataError
from olakit.notebook.sweep import expand, load_spec, run_sweep

pytestmark = pytest.mark.slow


def write(tmp_path, text):
    p = tmp_path / "sweep.yaml"
    p.write_text(text)
    return p


def test_spec_errors_say_what_and_where(tmp_path):
    with pytest.raises(ConfigError, match=r"sweep.yaml: SweepFile: notebooks: required"):
        load_spec(write(tmp_path, "parallel: 2\n"))
    with pytest.raises(ConfigError, match=r"SweepFile: notebooks=\[\]: list should have at least 1 item"):
        load_spec(write(tmp_path, "notebooks: []\n"))
    with pytest.raises(ConfigError, match=r"SweepFile: executor='coin': input should be 'local' or 'dask'"):
        load_spec(write(tmp_path, "executor: coin\nnotebooks:\n  - notebook: notebooks/template_count.ipynb\n"))
    with pytest.raises(ConfigError, match=r"SweepFile: notebooks.0: SweepEntry: notebook: required"):
        load_spec(write(tmp_path, "notebooks:\n  - name: x\n"))
    looked = r"\(looked at [^,]*/notebooks/nope.ipynb, [^,]*/notebooks/nope.ipynb\)$"  # no impossible places
    with pytest.raises(
        DataError, match=r"sweep.yaml: notebooks\[0\]: notebook notebooks/nope.ipynb: not found " + looked
    ):
        load_spec(write(tmp_path, "notebooks:\n  - notebook: notebooks/nope.ipynb\n"))
    with pytest.raises(ConfigError, match=r"notebooks.0: SweepEntry: grid.tie=\[\]: list should have at least 1 item"):
        load_spec(write(tmp_path, "notebooks:\n  - notebook: notebooks/template_count.ipynb\n    grid: {tie: []}\n"))
    with pytest.raises(DataError, match="out_dir is set by the sweep"):
        load_spec(
            write(tmp_path, "notebooks:\n  - notebook: notebooks/template_count.ipynb\n    parameters: {out_dir: x}\n")
        )
    with pytest.raises(ConfigError, match=r"paralel=2: not a setting of SweepFile; known: run_id, parallel"):
        load_spec(write(tmp_path, "paralel: 2\nnotebooks:\n  - notebook: notebooks/template_count.ipynb\n"))
    nb = "notebooks:\n  - notebook: notebooks/template_count.ipynb\n"
    with pytest.raises(
        DataError, match=r"notebooks\[0\]: unknown parameters \['sorce'\]; template_count takes: source, "
    ):
        load_spec(write(tmp_path, nb + "    parameters: {sorce: live}\n"))
    with pytest.raises(ConfigError, match=r"notebooks\[0\]: OlaGPTConfig: tie='coin': input should be"):
        load_spec(write(tmp_path, nb + "    grid: {tie: [first, coin]}\n"))


def test_grid_expands_to_named_runs(tmp_path):
    spec = load_spec(
        write(
            tmp_path,
            "notebooks:\n  - notebook: notebooks/template_count.ipynb\n"
            "    parameters: {source: recorded}\n"
            "    grid: {tie: [first, random], seed: [0, 1]}\n",
        )
    )
    jobs = expand(spec, "r1", tmp_path / "runs", tmp_path / "results")
    assert [j.name for j in jobs] == [
        "template_count__tie-first__seed-0",
        "template_count__tie-first__seed-1",
        "template_count__tie-random__seed-0",
        "template_count__tie-random__seed-1",
    ]
    assert jobs[3].parameters == {
        "source": "recorded",
        "tie": "random",
        "seed": 1,
        "out_dir": str(tmp_path / "results" / "r1" / jobs[3].name),
    }
    assert jobs[0].output == str(tmp_path / "runs" / "r1" / f"{jobs[0].name}.ipynb")


LIVE_SWEEP = """
run_id: live-test
parallel: 2
notebooks:
  - notebook: notebooks/notes_count.ipynb
    parameters: {source: live, n_questions: 2, strategies: [zero-shot, random], n_notes: [1], max_tokens: 16,
                 n_boot: 100}
  - notebook: notebooks/template_count.ipynb
    parameters: {source: live, n_questions: 2, templates: [turbo, ST], strategies: [zero-shot, random],
                 n_notes: [1], max_tokens: 16}
"""


def test_parallel_live_sweep_pays_each_prompt_once_and_reruns_from_cache(tmp_path, monkeypatch):
    import diskcache

    from olakit.llm.loopback import Loopback

    with Loopback(delay=0.05) as srv:
        monkeypatch.setenv("OLAKIT_BASE_URL", srv.base_url)
        monkeypatch.setenv("OLAKIT_MODEL", "fake")
        monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "cache"))
        spec = write(tmp_path, LIVE_SWEEP)
        index = run_sweep(spec, runs_dir=tmp_path / "runs", results_dir=tmp_path / "results")
        assert [r.status for r in index.runs] == ["ok", "ok"], [r.error for r in index.runs]
        # 2 type calls; ST x (zero-shot, random n=1) x 2 questions = 4, all shared with template_count;
        # template_count adds turbo x 2 strategies x 2 questions = 4
        unique = 2 + 4 + 4
        assert srv.requests == unique and set(srv.per_prompt.values()) == {1}
        with diskcache.Cache(str(tmp_path / "cache")) as cache:
            assert len(cache) == unique  # no entry lost, no in-flight marker left
        assert (tmp_path / "runs" / "live-test" / "notes_count.ipynb").is_file()
        saved = json.loads((tmp_path / "runs" / "live-test" / "index.json").read_text())
        assert saved["calls"]["paid"] + saved["calls"]["cached"] == saved["calls"]["unique_prompts"]
        man = json.loads((tmp_path / "results" / "live-test" / "template_count" / "run.json").read_text())
        assert man["roles"]["answerer"]["identity"] == f"{srv.base_url}|fake"
        assert man["outputs"]["records"]["models"] == ["fake"] and man["calls"]["answerer"]["failed"] == 0
        assert (tmp_path / "results" / "live-test" / "notes_count" / "figures" / "fig9_notes_count.pdf").is_file()
        again = run_sweep(spec, runs_dir=tmp_path / "runs", results_dir=tmp_path / "results")
        assert srv.requests == unique and again.calls["paid"] == 0
        assert [r.status for r in again.runs] == ["kept", "kept"]  # nothing changed: no notebook executed again


PROBE = """
import json, os
from pathlib import Path

Path(out_dir).mkdir(parents=True, exist_ok=True)
env = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
if source == "live":
    from olakit.llm import LLM

    with LLM(progress=False) as llm:
        env["answer"] = llm.complete("Say hi.", max_tokens=2).text
        env["concurrency"] = llm.concurrency
Path(out_dir, "env.json").write_text(json.dumps(env))
"""


def probe_notebook(path):
    """A notebook that records its kernel's thread limits and, when live, makes one call to the model."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('source = "recorded"\nout_dir = "x"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(PROBE)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.write(nb, path)
    return path


@pytest.mark.real_model
def test_a_live_sweep_keeps_the_terminal_quiet_and_follows_the_thread_rules(tmp_path, own_machine):
    """The first live call loads the machine's model, with the sweep's log and thread rules; a rerun whose calls are
    all cached loads none."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from olakit.llm.daemon import _alive
    from olakit.notebook.sweep import thread_rules

    nb = probe_notebook(tmp_path / "probe.ipynb")
    spec = write(
        tmp_path,
        f"run_id: quiet\nparallel: 2\nnotebooks:\n  - notebook: {nb}\n    grid: {{source: [recorded, live]}}\n",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "olakit.cli", "sweep", str(spec), "--runs-dir", str(tmp_path / "runs")]
        + ["--results-dir", str(tmp_path / "results")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # the terminal, in order
        text=True,
        timeout=600,
        env=own_machine,  # no embedded server runs: the sweep starts the machine's, with its rules and its log
    )
    terminal = proc.stdout
    assert proc.returncode == 0, terminal[-2000:]
    server_log = tmp_path / "runs" / "quiet" / "embedded-server.log"
    logged = server_log.read_text()
    cores = os.cpu_count()
    threads = int(own_machine.get("OLAKIT_EMBEDDED_THREADS") or cores)  # make test sets 1 (docs/llm.md)
    # llama.cpp's log went to the file: it loaded the model on every core (or as the environment says) with 4 slots
    # and served the call
    assert "load_model" in logged and f"n_threads = {threads}\n" in logged and "n_slots = 4" in logged
    # and none of it, nor the kernels' or papermill's chatter, reached the terminal
    for chatter in (
        "load_model",
        "llama",
        "n_slots",
        "launch_slot",
        "srv ",
        "without encryption",
        "papermill",
        "Executing",
    ):
        assert chatter not in terminal, chatter
    assert terminal.count(str(server_log)) == 1  # its path, printed once
    lines = [ln for ln in terminal.splitlines() if ln.strip()]
    assert sum("probe__source-recorded" in ln for ln in lines) == 2  # its progress line and its summary row
    assert lines[-2].startswith("sweep quiet: 2 notebooks (2 made, 0 kept) in "), lines[-4:]
    assert lines[-1].startswith("embedded model: 2 tokens generated at ")  # the probe's one call, 2 tokens
    rules = thread_rules(cores, 2)
    recorded = json.loads((tmp_path / "results" / "quiet" / "probe__source-recorded" / "env.json").read_text())
    live = json.loads((tmp_path / "results" / "quiet" / "probe__source-live" / "env.json").read_text())
    assert set(recorded.values()) == {str(rules["recorded_threads"])}
    assert {live[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")} == {"1"}
    assert live["answer"] and live["concurrency"] == rules["server_slots"]
    index = json.loads((tmp_path / "runs" / "quiet" / "index.json").read_text())
    assert index["threads"] == rules and index["server_log"] == str(server_log)
    # the live run loaded the model (no call had been cached); the same sweep again, its server stopped, loads none
    (record,) = (Path(own_machine["XDG_CACHE_HOME"]) / "olakit" / "servers").glob("*.json")
    pid = json.loads(record.read_text())["pid"]
    os.kill(pid, signal.SIGTERM)
    for _ in range(300):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.1)
    again = subprocess.run(
        [sys.executable, "-m", "olakit.cli", "sweep", str(spec), "--run-id", "again", "--runs-dir",
         str(tmp_path / "runs"), "--results-dir", str(tmp_path / "results")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600, env=own_machine,
    )  # fmt: skip
    assert again.returncode == 0, again.stdout[-2000:]
    assert "every live call was in the cache: no embedded model was loaded" in again.stdout
    index = json.loads((tmp_path / "runs" / "again" / "index.json").read_text())
    assert index["server"] is None and index["server_log"] is None and index["calls"]["paid"] == 0
    assert not (tmp_path / "runs" / "again" / "embedded-server.log").exists()
    assert not any(_alive(json.loads(r.read_text())["pid"]) for r in record.parent.glob("*.json"))


def test_a_failing_notebook_is_reported_by_its_own_exception(tmp_path, capsys):
    """The terminal and the index name the exception the notebook raised, not papermill's banner ("Exception
    encountered at In [3]")."""
    from olakit.cli import main

    spec = write(
        tmp_path,
        "run_id: broken\nnotebooks:\n  - notebook: notebooks/template_count.ipynb\n"
        f"    parameters: {{source: recorded, data_dir: {tmp_path / 'nowhere'}}}\n",
    )
    main(["sweep", str(spec), "--runs-dir", str(tmp_path / "runs"), "--results-dir", str(tmp_path / "results")])
    out = capsys.readouterr().out
    (line,) = [ln for ln in out.splitlines() if "template_count" in ln and ln.startswith("failed")]
    assert "(DataError: " in line and "nowhere" in line and "Exception encountered" not in line
    run = json.loads((tmp_path / "runs" / "broken" / "index.json").read_text())["runs"][0]
    assert run["error"].startswith("DataError: ") and "raise DataError" in run["detail"]  # the traceback kept


def test_a_sweep_prints_its_plan_and_says_when_it_runs_on_the_embedded_model():
    """`olakit sweep sweeps/geek_dev.yaml` with no endpoint set started 229 x 6 GEEK runs on the CPU model with no
    plan and no warning. By hand: template_count on 2 questions x 2 templates x the zero-shot cell = 4 answers, plus
    2 question types: 6 calls; geek_ablation's parameters cell asks for 5 questions."""
    from olakit.notebook.jobs import Job
    from olakit.notebook.sweep import plan_lines

    live = [
        Job("template_count", "notebooks/template_count.ipynb",
            {"source": "live", "n_questions": 2, "templates": ["turbo", "ST"], "strategies": "zero-shot"}, "o"),
        Job("geek_ablation", "notebooks/geek_ablation.ipynb", {}, "o"),
    ]  # fmt: skip
    lines = plan_lines(live, embedded=True)
    assert lines[0].startswith("plan: 2 live notebooks on ") and "6 calls" in lines[1], lines
    assert "5 questions" in lines[2] and "embedded test model" in lines[-1] and "OLAKIT_BASE_URL" in lines[-1]
    assert not any("embedded" in line for line in plan_lines(live[:1], embedded=False)[1:])
    assert plan_lines([], embedded=True) == []


@pytest.mark.skipif(os.name != "posix", reason="IPC sockets are POSIX's")
def test_kernels_started_at_once_talk_over_sockets_of_their_own_and_start_once(tmp_path):
    """CI once lost a kernel to 'Address already in use': jupyter_client picks free TCP ports by binding and
    releasing them, and two kernels starting at the same moment took one. Each kernel now has IPC sockets in a
    private folder (no port to pick), gone when its notebook ends: four notebooks started at once each start once."""
    from concurrent.futures import ThreadPoolExecutor

    import nbformat

    from olakit.notebook.jobs import Job, execute

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import ipykernel, json\ninfo = ipykernel.get_connection_info(unpack=True)\n"
        "print(json.dumps([info['transport'], info['ip']]))"
    )]  # fmt: skip
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "probe.ipynb")
    jobs = [Job(f"p{i}", str(tmp_path / "probe.ipynb"), {}, str(tmp_path / f"out{i}.ipynb")) for i in range(4)]
    with ThreadPoolExecutor(len(jobs)) as pool:
        done = list(pool.map(execute, jobs))
    assert [(j.status, j.attempts) for j in done] == [("ok", 1)] * 4, [j.error for j in done]
    seen = [json.loads(nbformat.read(j.output, 4).cells[0].outputs[0]["text"]) for j in done]
    assert {transport for transport, _ in seen} == {"ipc"}
    folders = {str(Path(ip).parent) for _, ip in seen}
    assert len(folders) == 4 and not any(Path(f).exists() for f in folders)  # one each, removed after
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out0.ipynb", "out1.ipynb", "out2.ipynb", "out3.ipynb",
                                                          "probe.ipynb"]  # fmt: skip


@pytest.mark.real_model
def test_a_live_sweep_shares_the_embedded_server_already_running(tmp_path, own_machine):
    """Found, not started twice: with another process holding the machine's server, the sweep uses it and counts
    only its own tokens (the server's counters include the other process's)."""
    import subprocess
    import sys

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER], env=own_machine, stdout=subprocess.PIPE, text=True, stdin=subprocess.PIPE
    )
    try:
        pid, url = holder.stdout.readline().split()
        nb = probe_notebook(tmp_path / "probe.ipynb")
        spec = write(tmp_path, f"run_id: shared\nnotebooks:\n  - notebook: {nb}\n    grid: {{source: [live]}}\n")
        proc = subprocess.run(
            [sys.executable, "-m", "olakit.cli", "sweep", str(spec), "--runs-dir", str(tmp_path / "runs")]
            + ["--results-dir", str(tmp_path / "results")],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=600,
            env=own_machine,
        )
    finally:
        holder.stdin.close()  # it exits
        holder.wait(timeout=30)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert f"embedded model already running at {url}" in proc.stdout
    assert not (tmp_path / "runs" / "shared" / "embedded-server.log").exists()  # no second server, no second log
    index = json.loads((tmp_path / "runs" / "shared" / "index.json").read_text())
    assert index["server"]["tokens_generated"] == 2  # the probe's one call; the holder's 6 tokens are not its


HOLDER = """
import sys
from olakit.llm import LLM, Request
from olakit.llm.daemon import machine_server
r = LLM(progress=False).batch([Request.make("Say hello.", max_tokens=6, temperature=0)])[0]
assert r.completion_tokens == 6, r
s = machine_server()
print(s.pid, s.base_url, flush=True)
sys.stdin.read()
"""


def test_sweep_settings_take_the_same_forms_in_the_file_and_as_flags(tmp_path):
    """The sweep file has its config type (SweepFile: SweepSettings + notebooks): "1" is the integer 1 in the file,
    a single grid value is one point, and a flag given overrides the file's setting of the same name."""
    from olakit.cli import main

    nb = probe_notebook(tmp_path / "probe.ipynb")
    text = f'run_id: r\nparallel: "1"\nnotebooks:\n  - notebook: {nb}\n    grid: {{source: recorded}}\n'
    spec = write(tmp_path, text)
    loaded = load_spec(spec)
    assert loaded.parallel == 1 and loaded.notebooks[0].grid == {"source": ["recorded"]}
    assert [j.name for j in expand(loaded, "r", tmp_path, tmp_path)] == ["probe__source-recorded"]
    dirs = ["--runs-dir", str(tmp_path / "runs"), "--results-dir", str(tmp_path / "results")]
    assert main(["sweep", str(spec), "--parallel", "2", "--run-id", "flagged", *dirs]) == 0
    index = json.loads((tmp_path / "runs" / "flagged" / "index.json").read_text())
    assert index["parallel"] == 2 and index["config_type"] == "SweepFile"
    assert index["config"]["parallel"] == 2 and index["config"]["run_id"] == "flagged"
    assert main(["sweep", str(spec), "--parallel", "0", *dirs]) == 2  # validated where it is defined


def test_a_sweep_does_not_repeat_papermills_unknown_parameter_warning_for_settings(tmp_path, caplog):
    """A setting of a notebook's config (tie) is not in its parameters cell, so papermill alone warns "Passed unknown
    parameter"; the sweep has checked every name itself, and the warning is not shown."""
    import logging
    from pathlib import Path

    notebook = Path(__file__).resolve().parent.parent / "notebooks" / "template_count.ipynb"
    spec = write(tmp_path, f"run_id: quiet\nnotebooks:\n  - notebook: {notebook}\n"
                           "    parameters: {n_questions: 3, tie: random}\n")  # fmt: skip
    with caplog.at_level(logging.WARNING):
        index = run_sweep(spec, runs_dir=tmp_path / "runs", results_dir=tmp_path / "results")
    assert [r.status for r in index.runs] == ["ok"]
    assert not [r for r in caplog.records if "unknown parameter" in r.getMessage()]


def test_live_runs_take_the_first_free_slot_within_both_limits(monkeypatch):
    """run_local: recorded runs start first; a live run starts as soon as a slot frees (before the longest recorded
    run ends); never more than ``parallel`` kernels at once, nor more than ``live_at_once`` live ones; each kind
    gets its thread limits."""
    import threading
    import time

    from olakit.notebook import sweep
    from olakit.notebook.jobs import Job

    rules = sweep.thread_rules(2, 3)  # live_at_once 2, 1 thread each
    recorded = [Job(f"rec{i}", "x.ipynb", {}, "x") for i in range(3)]
    live = [Job(f"live{i}", "x.ipynb", {}, "x") for i in range(4)]
    lock, running, seen, starts, ends, envs = threading.Lock(), set(), [], {}, {}, {}
    clock = time.perf_counter

    def execute(job, env=None):  # the scheduler is under test, not papermill: each job sleeps for its length
        with lock:
            running.add(job.name)
            seen.append(sorted(running))
            starts[job.name], envs[job.name] = clock(), env
        time.sleep(0.6 if job.name == "rec0" else 0.1)
        with lock:
            running.discard(job.name)
            ends[job.name] = clock()
        return job

    monkeypatch.setattr(sweep, "execute", execute)
    sweep.run_local(recorded, live, 3, rules, {"OLAKIT_X": "1"})
    assert set(starts) == {j.name for j in recorded + live}
    assert max(len(s) for s in seen) <= 3
    assert max(sum(n.startswith("live") for n in s) for s in seen) <= rules["live_at_once"]
    assert max(starts[j.name] for j in recorded) < min(starts[j.name] for j in live)  # recorded ones first
    assert min(starts[j.name] for j in live) < ends["rec0"]  # no wait for the last recorded run
    assert envs["rec0"]["OMP_NUM_THREADS"] == str(rules["recorded_threads"]) and envs["rec0"]["OLAKIT_X"] == "1"
    assert envs["live0"]["OMP_NUM_THREADS"] == str(rules["live_threads"]) and envs["live0"]["OLAKIT_X"] == "1"


def test_a_warm_sweep_keeps_every_unchanged_result_and_makes_again_only_what_changed(tmp_path, monkeypatch):
    """Incremental results: a second sweep over unchanged inputs executes no notebook (each entry "kept", its folder
    as it was); after one notebook is edited only that one runs; a changed dataset file or answers gone from the
    cache make their results again; --force makes everything again."""
    import shutil

    from olakit.llm.loopback import Loopback
    from olakit.result import ANSWERS

    repo = Path(__file__).resolve().parent.parent
    for name in ("template_count", "notes_count"):  # copies, so that one can be edited
        shutil.copy(repo / "notebooks" / f"{name}.ipynb", tmp_path / f"{name}.ipynb")
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(json.dumps({"question": f"{i} + 1?", "answer": i + 1}) + "\n" for i in range(3)))
    spec = write(
        tmp_path,
        f"""
run_id: incremental
notebooks:
  - notebook: {tmp_path / "template_count.ipynb"}
    parameters: {{source: recorded, n_questions: 4, n_boot: 50}}
  - notebook: {tmp_path / "notes_count.ipynb"}
    parameters: {{source: live, dataset: {data}, n_questions: 2, strategies: [zero-shot], n_notes: [1],
                 max_tokens: 16, n_boot: 50}}
""",
    )
    results = tmp_path / "results" / "incremental"

    def sweep(**kw):
        index = run_sweep(spec, runs_dir=tmp_path / "runs", results_dir=tmp_path / "results", **kw)
        return {r.name: r.status for r in index.runs}, index

    def logs():
        return {n: (results / n / "run.json").read_bytes() for n in ("template_count", "notes_count")}

    with Loopback(reply=replies_numbers) as srv:
        monkeypatch.setenv("OLAKIT_BASE_URL", srv.base_url)
        monkeypatch.setenv("OLAKIT_MODEL", "fake")
        monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "cache"))
        assert sweep()[0] == {"template_count": "ok", "notes_count": "ok"}
        paid, before = srv.requests, logs()
        assert (results / "notes_count" / ANSWERS).is_file() and paid > 0
        statuses, index = sweep()
        assert statuses == {"template_count": "kept", "notes_count": "kept"} and logs() == before
        saved = json.loads((tmp_path / "runs" / "incremental" / "index.json").read_text())
        assert [r["status"] for r in saved["runs"]] == ["kept", "kept"] and srv.requests == paid
        notebook = json.loads((tmp_path / "template_count.ipynb").read_text())  # one cell edited
        notebook["cells"][1]["source"].append("\nEdited.")
        (tmp_path / "template_count.ipynb").write_text(json.dumps(notebook))
        assert sweep()[0] == {"template_count": "ok", "notes_count": "kept"}
        data.write_text(data.read_text().replace('"answer": 3', '"answer": 30'))  # the live run's dataset changed
        assert sweep()[0] == {"template_count": "kept", "notes_count": "ok"}
        monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "another-cache"))  # its answers are gone
        assert sweep()[0] == {"template_count": "kept", "notes_count": "ok"}
        assert sweep(force=True)[0] == {"template_count": "ok", "notes_count": "ok"}


def replies_numbers(prompt, request):
    from tests.replies import numbers

    return numbers(prompt, request)


def test_every_shipped_sweep_file_loads_and_names_notebooks_that_exist(tmp_path):
    from olakit.notebook.sweep import expand, load_spec

    files = sorted((Path(__file__).resolve().parents[1] / "sweeps").glob("*.yaml"))
    assert {f.stem for f in files} >= {"paper", "geek_dev", "review_iterations", "ekar"}
    for f in files:
        jobs = expand(load_spec(f), f.stem, tmp_path / "runs", tmp_path / "results")
        assert jobs and all(Path(j.notebook).is_file() for j in jobs), f
    (ekar,) = expand(load_spec(files[[f.stem for f in files].index("ekar")]), "e", tmp_path, tmp_path)
    assert {k: ekar.parameters[k] for k in ("pool", "r", "n_questions")} == {"pool": 1155, "r": 3, "n_questions": None}
