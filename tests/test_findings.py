"""What checks from outside found, tried as a new user would (issue 52): each finding as a test that fails on the
code it was found in. Expected values are worked from the raw data files and the scripted replies by hand."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from olakit.data.loaders import resolve_data_dir

ROOT = Path(__file__).resolve().parent.parent


def _aqua(i: int) -> dict:
    with open(resolve_data_dir() / "aqua" / "test.json", encoding="utf-8") as f:
        return [json.loads(line) for line in f][i]


def choosing(prompt, request):
    """The controller picks DT and ST for AQuA test-0, PT and turbo for every other question; every answer is A."""
    if "question type" in prompt.lower() or "judge the type" in prompt:
        return '{"task_type": "math word problem"}'
    if "Which 2 of them suit the question below best?" in prompt:
        return "DT, ST" if _aqua(0)["question"][:60] in prompt else "PT, turbo"
    return 'Step by step. {"Answer": "A"}'


def olakit(args, tmp_path, reply="choosing", module="tests.test_findings"):
    env = {
        **{k: v for k, v in __import__("os").environ.items() if not k.startswith("OLAKIT_")},
        "OLAKIT_BASE_URL": f"scripted://{module}:{reply}",
        "OLAKIT_MODEL": "scripted",
        "OLAKIT_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run([sys.executable, "-m", "olakit.cli", *args], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=300)  # fmt: skip


def test_1_template_choice_alone_makes_its_tables_without_a_vote_over_templates_it_did_not_run(tmp_path):
    """`olakit run ... --choose-k 2` paid for its calls, then failed: "templates ['DST', 'DT', 'turbo'] have no
    records". Each chosen template is counted on the questions it answered, the chosen vote on all, no regex vote."""
    golds = [_aqua(0)["correct"], _aqua(1)["correct"]]
    assert golds == ["A", "E"]
    for extra in ([], ["--verify", "--diy"]):
        out = tmp_path / f"out{len(extra)}"
        done = olakit(["run", "--dataset", "aqua", "-n", "2", "--strategies", "zero-shot,random", "--n-notes", "1",
                       "--baselines", "", "--votes", "regex_vote", "--choose-k", "2", *extra, "--out", str(out)],
                      tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        methods = pd.read_csv(out / "tables" / "methods.csv").set_index(["method", "notes_strategy"])
        for strategy in ("zero-shot", "random"):
            # test-0 (gold A): DT and ST, both answer A: right; test-1 (gold E): PT and turbo answer A: wrong
            for template, n, correct in (("DT", 1, 1), ("ST", 1, 1), ("PT", 1, 0), ("turbo", 1, 0)):
                assert tuple(methods.loc[(template, strategy), ["n", "correct"]]) == (n, correct)
            assert tuple(methods.loc[("chosen_vote", strategy), ["n", "correct"]]) == (2, 1)
            assert ("DST", strategy) not in methods.index  # never chosen: no row, no error
        assert "regex_vote" not in methods.index.get_level_values("method")
        tests = pd.read_csv(out / "tables" / "paired_tests.csv")
        pair = tests[(tests["a"] == "DT | zero-shot") & (tests["b"] == "ST | zero-shot")]
        assert pair["n"].tolist() == [1]  # tested on the one question both answered


def test_2_an_unknown_tool_is_one_error_before_anything_is_paid():
    """`--tool-names abacus` paid one question-type call before its error (docs/olagpt.md: one clear error before
    anything runs)."""
    import pytest

    from olakit.errors import DataError
    from olakit.llm import ScriptedModel
    from olakit.olagpt.config import OlaGPTConfig
    from olakit.olagpt.run import run

    model = ScriptedModel(lambda prompt, request: "Answer: A")
    cfg = OlaGPTConfig(n_questions=1, templates=["ST"], strategies=["zero-shot"], tools="all", tool_names=["abacus"])
    with pytest.raises(DataError, match="abacus"):
        run(cfg, llm=model)
    assert model.calls == 0


def test_4_the_literal_loop_strips_every_reply_as_the_seeds_code_does():
    """The seed's get_response_from_model returns ``content.strip()``: a review that ends in blank lines reaches the
    revise prompt as ``...Score: 3\\nPlease improve...`` there, and did as ``...Score: 3\\n\\n\\nPlease improve...``
    in the kit."""
    from olakit.llm import ScriptedModel
    from olakit.review.config import ReviewConfig
    from olakit.review.loop import Loop

    def reply(prompt, request):
        if prompt.startswith("Here is the answer to the question"):
            return "Feedback: too short.\nOverall Score: 3\n\n\n"
        if prompt.startswith("Please break down"):
            return "1. Read it\nTotal Steps: 1\n\n"
        return "  An answer.  \n\n"

    model = ScriptedModel(reply)
    cfg = ReviewConfig(behaviour="literal", max_iterations=2)
    h = Loop({"answerer": model, "reviewer": model}, cfg).run(["What is 2 + 2?"])[0]
    revise = [s["input"] for s in h.stages if s["stage"].startswith("revise")]
    assert revise, [s["stage"] for s in h.stages]
    expected = (
        "Here is the original answer to the question 'What is 2 + 2?':\nAn answer.\n"
        "Here is the review of the answer:\nFeedback: too short.\nOverall Score: 3\n"
        "Please improve the original answer based on the review suggestions."
    )
    assert revise[0] == expected


def test_6_a_yes_no_answer_given_as_a_sentence_is_read_on_import(tmp_path):
    """Six hand-written StrategyQA answers, five of them right, scored 1 of 6: "So the answer is yes.", "The answer
    is no.", "No, because ..." were no answer. The golds are read from the raw dev file here."""
    from olakit.analysis.imports import import_spec

    with open(resolve_data_dir() / "strategyqa" / "dev.json", encoding="utf-8") as f:
        dev = json.load(f)[:6]
    golds = ["yes" if q["answer"] else "no" for q in dev]
    flip = {"yes": "no", "no": "yes"}
    forms = ["So the answer is {}.", "The answer is {}.", "{}, because the facts say so.", "Answer: **{}**",
             "the answer (yes or no) is {}", "{}. That much is certain."]  # fmt: skip
    said = [form.format(g if i < 5 else flip[g]) for i, (form, g) in enumerate(zip(forms, golds))]
    said = [s[0].upper() + s[1:] for s in said]
    rows = [{"qid": q["qid"], "reply": s} for q, s in zip(dev, said)]
    (tmp_path / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "spec.yaml").write_text(
        "dataset: strategyqa\nsplit: dev\nruns:\n  - {file: run.jsonl, run: hand, id: qid, answer: reply}\n"
    )
    records = import_spec(tmp_path / "spec.yaml").records
    assert records["correct"].sum() == 5 and records["extracted"].notna().all()
    assert set(records["read_rule"]) == {"yes_no:statement", "yes_no:leading"}


# ---- finding 7: mutants the fast tier missed, each a test of its own here


def test_7a_a_duplicate_import_row_is_counted_and_dropped(tmp_path):
    """A run that answers a question twice keeps its first answer and says so (the report's ``duplicates``)."""
    from olakit.analysis.imports import import_spec

    rows = [("test-0", "A"), ("test-1", "E"), ("test-1", "B"), ("test-2", "A")]
    (tmp_path / "run.jsonl").write_text("".join(json.dumps({"id": i, "pred": p}) + "\n" for i, p in rows))
    (tmp_path / "spec.yaml").write_text(
        "dataset: aqua\nruns:\n  - {file: run.jsonl, run: twice, id: id, answer: pred}\n"
    )
    res = import_spec(tmp_path / "spec.yaml")
    recs = res.records.set_index("question_id")
    assert len(recs) == 3 and recs.loc["test-1", "extracted"] == "E"  # the first answer stands
    report = res.extras.report.as_dict()["runs"][0]
    assert (report["matched"], report["duplicates"]) == (3, 1)
    golds = [_aqua(i)["correct"] for i in range(3)]
    assert int(recs["correct"].sum()) == sum(p == g for (_, p), g in zip([rows[0], rows[1], rows[3]], golds))


def test_7b_a_registered_family_of_two_is_holm_corrected():
    """The fast test's family had one member, where Holm changes nothing. Two comparisons: exact McNemar p by
    math.comb, Holm by hand; A vs B is significant alone (0.031) and not in the family (0.0625)."""
    from math import comb

    from olakit.analysis.inference import paired_tests
    from olakit.analysis.verdicts import mark_roles
    from olakit.registration import Registered, Registration
    from olakit.settings import Analysis

    a = [1] * 10 + [0] * 10
    b = [0] * 6 + [1] * 4 + [0] * 10  # A right alone on 6, B alone on none
    c = [0] * 5 + [1] * 5 + [1] + [0] * 9  # A alone on 5, C alone on 1
    outcomes = pd.DataFrame({"A | zero-shot": a, "B | zero-shot": b, "C | zero-shot": c}).astype(bool)
    tests = paired_tests(outcomes, analysis=Analysis(n_boot=200))

    def exact(k, n):  # two-sided exact McNemar: 2 P(X <= k), X ~ Bin(n, 1/2), at most 1
        return min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2**n)

    p_ab, p_ac = exact(0, 6), exact(1, 6)
    assert (p_ab, p_ac) == (0.03125, 0.21875)
    holm_ab, holm_ac = 2 * p_ab, max(2 * p_ab, p_ac)  # Holm: the smaller p times 2, then the larger times 1
    family = Registered(Registration(comparisons=["A:zero-shot vs B:zero-shot", "A:zero-shot vs C:zero-shot"]),
                        "r.yaml", "", "")  # fmt: skip
    registered = mark_roles(tests, family, Analysis())["registered"].set_index("comparison")
    assert registered.loc["A:zero-shot vs B:zero-shot", "p_holm_family"] == holm_ab == 0.0625
    assert registered.loc["A:zero-shot vs C:zero-shot", "p_holm_family"] == holm_ac
    assert not registered["decided"].any()


def test_7c_the_pool_sampler_gives_the_remainder_to_the_largest_remainders():
    """Quotas 7 x (15, 10, 5) / 30 = 3.5, 2.33, 1.17: floors 3, 2, 1 and the one left to the largest remainder
    (coin); 8 x: 4, 2.67, 1.33 -> the one left to train. The fast test's quotas were whole (6: 3, 2, 1)."""
    from olakit.olagpt.active_learning import sample_pool
    from olakit.types import Question

    topics = {
        "coin": ("A coin is tossed {} times; what is the probability of all heads?", 15),
        "train": ("A train travels {} km in 2 hours; what is its speed in km per hour?", 10),
        "recipe": ("A cake recipe needs {} eggs and flour; how many cakes can a baker make from 30 eggs?", 5),
    }
    opts = {"A": "1", "B": "2"}
    pool = [Question(id=f"{t}-{i}", dataset="aqua", text=tpl.format(i + 2), options=opts, gold="A")
            for t, (tpl, size) in topics.items() for i in range(size)]  # fmt: skip
    for size, want in ((7, {"coin": 4, "train": 2, "recipe": 1}), (8, {"coin": 4, "train": 3, "recipe": 1})):
        chosen = sample_pool(pool, size, k=3, seed=0)
        assert {t: sum(q.id.startswith(t) for q in chosen) for t in topics} == want


def test_7d_closest_option_breaks_a_tie_to_the_first_option():
    """docs/tools.md: the option whose number is closest, ties to the first (in the options' order)."""
    from olakit.tools.program import closest_option

    assert closest_option("12", {"A": "10", "B": "14", "C": "20"}) == "A"
    assert closest_option("12", {"A": "14", "B": "10", "C": "20"}) == "A"
    assert closest_option("13", {"A": "10", "B": "14"}) == "B"


KILL_SCRIPT = """
import asyncio, sys
from olakit.llm import LLM, Endpoint, Request
from olakit.llm.cache import AnswerCache

store = AnswerCache.astore_answer


async def slow_store(self, key, answer):  # a cache that falls behind under load (a busy disk): 0.3 s a store
    await asyncio.sleep(0.3)
    await store(self, key, answer)


AnswerCache.astore_answer = slow_store
requests = [Request.make(f"question {i}", max_tokens=8) for i in range(40)]
with LLM(Endpoint(sys.argv[1], "fake"), cache_dir=sys.argv[2], concurrency=4, progress=False) as llm:
    llm.batch(requests)
"""


def test_a_kill_loses_no_answer_that_was_paid_for_but_the_calls_in_flight(tmp_path):
    """A process killed mid-batch lost answers it had received and not yet stored (8 in one measured run), since
    each was stored in the background while its lane went on: paid twice on the rerun. Now each is stored before its
    lane's next call: at the kill, each of the 4 lanes holds one call at most (at the server, or its answer being
    stored), so the rerun pays at most 4 again. The store is slowed to 0.3 s (a cache behind under load)."""
    import os
    import signal

    from olakit.llm.loopback import Loopback

    with Loopback(delay=0.1) as srv:
        cmd = [sys.executable, "-c", KILL_SCRIPT, srv.base_url, str(tmp_path / "cache")]
        proc = subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": str(ROOT)})
        srv.wait_completed(16, timeout=120)
        in_flight = srv.active
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        paid_before = srv.requests
        assert 16 <= paid_before < 40
        done = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        twice = sum(n - 1 for n in srv.per_prompt.values())
    assert len(srv.per_prompt) == 40  # every prompt answered in the end
    print(f"{paid_before} calls before the kill, {in_flight} at the server at the kill, {twice} paid twice")
    assert twice <= 4  # the lanes: each one call in flight at most


def test_a_second_run_all_in_the_same_kernel_gives_the_same_result(tmp_path):
    """Issue 53, item 1: Run All, then Run All again in the same kernel, failed in every parameterised notebook
    ("unknown parameters ['params', 'tables']"): the notebook's own variables were taken for parameters. Two
    notebooks on the recorded outputs, each run twice in one kernel (nbclient, as JupyterLab's kernel runs them),
    their tables the same after each run."""
    import nbformat
    from nbclient import NotebookClient

    for name in ("template_count", "vote_type"):
        nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        client = NotebookClient(nb, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
        tables = []
        with client.setup_kernel():
            for _ in range(2):
                for i, cell in enumerate(nb.cells):
                    client.execute_cell(cell, i)  # CellExecutionError on an error output
                folder = tmp_path / "results" / name / "tables"
                tables.append({p.name: p.read_text() for p in sorted(folder.glob("*.csv"))})
        assert tables[0] and tables[0] == tables[1], name


def test_explore_opened_from_a_checkouts_notebooks_folder_finds_make_papers_results(tmp_path, monkeypatch):
    """Issue 53, item 2: explore.ipynb, opened in JupyterLab after `make paper`, said "no GEEK records at
    results/paper/geek_ablation/records.parquet: run `make paper`": JupyterLab runs a notebook in notebooks/, and
    `make paper` writes the checkout's results/. Its defaults, unedited, find them there; a message that finds
    nothing names every folder it looked in. The notebook runs in a kernel whose folder is the checkout's notebooks/,
    as JupyterLab's."""
    import nbformat
    from nbclient import NotebookClient

    from olakit.errors import DataError
    from olakit.notebook.parameters import located
    from tests.test_e2e_jupyterlab import geek_records

    checkout = tmp_path / "clone"
    for folder in ("notebooks", "sweeps", "results/paper/geek_ablation"):
        (checkout / folder).mkdir(parents=True)
    geek, corpus = geek_records(tmp_path)
    (checkout / "results/paper/geek_ablation/records.parquet").write_bytes(geek.read_bytes())
    monkeypatch.chdir(checkout / "notebooks")
    assert located("results/paper/geek_ablation/records.parquet", "x", "y") == (
        checkout / "results/paper/geek_ablation/records.parquet"
    )
    try:
        located("results/paper/review_loop/records.parquet", "review-loop records", "run `make paper`")
        raise AssertionError("found a file that is not there")
    except DataError as missing:
        said = str(missing)
    assert str(checkout / "notebooks/results/paper/review_loop/records.parquet") in said
    assert str(checkout / "results/paper/review_loop/records.parquet") in said and "run `make paper`" in said
    nb = nbformat.read(ROOT / "notebooks" / "explore.ipynb", as_version=4)
    nb.cells[0].source = nb.cells[0].source.replace('"strategyqa-facts:open"', repr(str(corpus)))
    client = NotebookClient(nb, kernel_name="python3", resources={"metadata": {"path": str(checkout / "notebooks")}})
    client.execute()
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "no GEEK records" not in printed and "no review-loop records at" in printed


def test_a_notebooks_output_folder_is_named_kept_and_a_collision_says_how_to_avoid_it(tmp_path):
    """Issue 53, item 4: `unchanged: kept None` with the default folder; a finished notebook named its executed copy
    but not where its tables went; two runs of one notebook with other parameters collided on its default folder,
    and the error did not say that `-p out_dir` (not `--output`) is the fix."""
    first = olakit(["notebook", "template_count"], tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "tables: results/template_count/tables" in first.stdout
    assert (tmp_path / "results/template_count/tables/template_count.csv").is_file()
    again = olakit(["notebook", "template_count"], tmp_path)
    assert again.returncode == 0 and "unchanged: kept results/template_count (" in again.stdout, again.stdout
    other = olakit(["notebook", "template_count", "-p", "tie", "random", "--output", "runs/tc.ipynb"], tmp_path)
    assert other.returncode == 2 and "holds another run" in other.stderr and "-p out_dir DIR" in other.stderr
    assert not (tmp_path / "runs" / "tc.ipynb").exists()  # refused before the kernel started


def test_the_pair_explorer_and_the_tables_give_one_holm_p_per_pair():
    """Issue 53, item 5: in compare_runs on PoT's import the matrix said PoT vs PoT-SC 0.11 and the pair table 0.22:
    the explorer's family had the vote in it (10 pairs), the tables' not (6). Given the tables' tests, the explorer
    shows their p for every pair, and says how many pairs its Holm is over."""
    from olakit.analysis.compare import CompareConfig, compare_runs
    from olakit.analysis.report import report
    from olakit.notebook.explorers.pairs import PairExplorer

    result = compare_runs(CompareConfig(sources=[str(ROOT / "imports" / "pot_aqua.yaml")], n_boot=100))
    tables = report(result)
    ours = tables["paired_tests"].set_index(["a", "b"])["p_mcnemar_holm"]
    assert len(ours) == 6  # four runs: six pairs
    pe = PairExplorer(
        result.records, result.templates, CompareConfig(sources=["x"], n_boot=100), tests=tables["paired_tests"]
    )
    shown = pe.tests.assign(
        a=pe.tests["a"].str.removesuffix(" | compared"), b=pe.tests["b"].str.removesuffix(" | compared")
    ).set_index(["a", "b"])["p_mcnemar_holm"]
    assert shown.sort_index().equals(ours.sort_index())
    assert "Holm over 6 pairs" in pe.table.value


def test_plan_after_a_run_without_a_registration_is_an_exploratory_plan(tmp_path):
    """Issue 53, item 7: `olakit plan --after RUN` refused a run made without a registration. What it can decide is
    exploratory: each pair (or each comparison named), Holm over every pair, and the questions an undecided one would
    need, every line marked exploratory."""
    done = olakit(["run", "-n", "3", "--templates", "ST,turbo", "--strategies", "zero-shot", "--out", "r"], tmp_path,
                  reply="steady", module="tests.replies")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    after = olakit(["plan", "--after", "r"], tmp_path, reply="steady", module="tests.replies")
    assert after.returncode == 0, after.stderr[-2000:]
    lines = after.stdout.strip().splitlines()
    assert lines[0] == "r: no registration in its run log: an exploratory plan, every comparison exploratory"
    pairs = [ln for ln in lines[1:] if ln.startswith("exploratory: ")]
    # three cells (ST, turbo and their regex vote under zero-shot): three pairs, every one the same answer B here
    assert len(pairs) == 3 and all("Holm p over every pair = 1" in ln for ln in pairs)


def test_a_headerless_csv_is_named_so_and_read_by_column_positions(tmp_path):
    """Issue 53, item 7: MMLU ships CSV files without a header; olakit said "a layout olakit does not recognise
    (fields: Berlin, C, Madrid, ...)". It says the first row looks like data, and a mapping by column numbers reads
    the file, its option columns labelled A, B, C, D by their place."""
    from olakit.data.datasets import load_file
    from olakit.errors import DataError

    path = tmp_path / "geography_test.csv"
    path.write_text('What is the capital of Germany?,Berlin,Paris,Madrid,Rome,A\n"Spain\'s capital?",Berlin,Paris,'
                    "Madrid,Rome,C\n")  # fmt: skip
    try:
        load_file(str(path))
        raise AssertionError("read a headerless file as if it had a header")
    except DataError as exc:
        said = str(exc)
    assert "its first row looks like data" in said and "question=0,choices=1|2|3|4,answer=5" in said
    qs = load_file(str(path), "question=0,choices=1|2|3|4,answer=5")
    assert [(q.text, q.options, q.gold) for q in qs] == [
        ("What is the capital of Germany?", {"A": "Berlin", "B": "Paris", "C": "Madrid", "D": "Rome"}, "A"),
        ("Spain's capital?", {"A": "Berlin", "B": "Paris", "C": "Madrid", "D": "Rome"}, "C"),
    ]


def test_make_s_apt_get_waits_for_another_that_holds_the_package_lock(tmp_path):
    """Issue 53, item 7: `make test` stopped at once when another apt-get held the dpkg lock. The Makefile's apt-get
    (its APT_GET, read from make) waits: with the lock held for 3 s here (as apt-get holds it, an fcntl lock on
    dpkg's lock-frontend file), installing an installed package succeeds once the lock is free."""
    import fcntl
    import os
    import shutil
    import threading
    import time

    import pytest

    lock = Path("/var/lib/dpkg/lock-frontend")
    if os.geteuid() != 0 or not shutil.which("apt-get") or not lock.exists() or not shutil.which("redis-server"):
        pytest.skip("needs root and Debian's apt-get (CI and the developers' machines have both)")
    apt = subprocess.run(["make", "-s", "--eval", "show-apt: ; @echo $(APT_GET)", "show-apt"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60).stdout.split()  # fmt: skip
    assert apt[0] == "apt-get" and "DPkg::Lock::Timeout=600" in apt
    fd = os.open(lock, os.O_RDWR)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    threading.Timer(3.0, lambda: (fcntl.lockf(fd, fcntl.LOCK_UN), os.close(fd))).start()
    t0 = time.monotonic()
    done = subprocess.run([*apt, "install", "-y", "-q", "redis-server"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-1000:]
    assert time.monotonic() - t0 >= 2.5  # it waited for the lock instead of failing at once


def test_a_long_sweep_says_where_it_is_and_a_slow_model_as_it_happens(caplog):
    """Issue 53, item 3: `make paper` printed nothing for 14 minutes while the review loop ran, and a rate of 1.15
    tokens/s per slot against the plan's 22 was seen only at the end. A sweep's heartbeat says which notebooks run,
    for how long, how many are done, and, once, that the embedded model is far slower than planned (its rate is read
    from the server's metrics; here a stand-in returns 1.3, about what the server did then)."""
    import logging
    import time

    from olakit.notebook.jobs import Job
    from olakit.notebook.sweep import EMBEDDED_RATE, Heartbeat

    class Busy(Heartbeat):
        def _rate(self):
            return 1.3

    caplog.set_level(logging.INFO, logger="olakit")
    a, b = Job("review_loop", "x", {}, "o"), Job("vote_type", "x", {}, "o")
    with Busy(total=3, embedded=True, every=0.05) as beat:
        beat.started(a)
        beat.started(b)
        beat.finished(b)
        time.sleep(0.3)
    lines = [r.getMessage() for r in caplog.records]
    assert any(ln.startswith("running: review_loop (0 s); 1 of 3 notebooks done; the embedded model generates 1.3")
               for ln in lines), lines  # fmt: skip
    slow = [ln for ln in lines if "far below" in ln]
    assert len(slow) == 1 and f"far below the {EMBEDDED_RATE:.0f} the plan assumed" in slow[0]
