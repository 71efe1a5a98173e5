"""Batch mode (olakit.llm.batch) through the real openai client against the loopback server's files and batches
endpoints, with scripted state sequences: completed, partially failed, expired with half done, failed validation,
and a process killed while waiting, then resumed; counted at the server: every request answered once."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from olakit.llm import LLM, Endpoint
from olakit.llm.answerer import CallsFailed, refuse
from olakit.llm.batch import BatchAnswerer, _chunks
from olakit.llm.loopback import Loopback
from olakit.llm.request import Request

PROMPTS = [f"question {i}" for i in range(6)]


def reply(prompt, request):
    return f"Answer: {prompt.split()[-1]}"


def requests():
    return [Request.make(p, max_tokens=8) for p in [*PROMPTS, PROMPTS[0]]]  # one repeated


def answerer(srv, tmp_path, **kw):
    llm = LLM(Endpoint(srv.base_url, "m"), cache_dir=tmp_path / "cache", progress=False)
    return llm, BatchAnswerer(llm, poll=0.01, progress=False, **kw)


def test_a_completed_batch_gives_the_online_answers_and_a_rerun_pays_nothing(tmp_path):
    with Loopback(reply=reply) as online, Loopback(reply=reply) as srv:
        with LLM(Endpoint(online.base_url, "m"), cache_dir=tmp_path / "online", progress=False) as llm:
            want = [(r.text, r.prompt_tokens, r.completion_tokens, r.finish_reason) for r in llm.batch(requests())]
        llm, batch = answerer(srv, tmp_path)
        got = batch.batch(requests())
        assert [(r.text, r.prompt_tokens, r.completion_tokens, r.finish_reason) for r in got] == want
        assert list(srv.batches) == batch.submitted and srv.batches[batch.submitted[0]]["request_counts"]["total"] == 6
        assert all(srv.completed[p] == 1 for p in PROMPTS)  # each distinct request once; the repeat rides along
        again = batch.batch(requests())  # from the cache: no batch, nothing paid
        assert len(srv.batches) == 1 and all(r.cached for r in again) and batch.journal() == {}
        # the online client reads the batch's answers from the cache too
        assert [r.text for r in llm.batch(requests())] == [w[0] for w in want] and sum(srv.completed.values()) == 6
        llm.close()


def test_requests_that_failed_alone_are_resubmitted_alone_and_errors_are_never_cached(tmp_path):
    fails = lambda prompt, attempt: "scripted 500" if prompt == PROMPTS[2] and attempt == 1 else None  # noqa: E731
    with Loopback(reply=reply, batch_errors=fails) as srv:
        llm, batch = answerer(srv, tmp_path)
        got = refuse(batch.batch(requests()), "answers")
        assert [r.text for r in got[:6]] == [f"Answer: {i}" for i in range(6)]
        sizes = [b["request_counts"]["total"] for b in srv.batches.values()]
        assert sizes == [6, 1]  # the failed one alone
        assert all(srv.completed[p] == 1 for p in PROMPTS)
        llm.close()


def test_an_expired_batch_has_its_unrun_half_resubmitted(tmp_path):
    states = lambda n: ("validating", "in_progress", "expired") if n == 1 else ("validating", "completed")  # noqa: E731
    with Loopback(reply=reply, batch_states=states) as srv:
        llm, batch = answerer(srv, tmp_path)
        got = refuse(batch.batch(requests()), "answers")
        assert [r.text for r in got] == [f"Answer: {i}" for i in (0, 1, 2, 3, 4, 5, 0)]
        assert [b["request_counts"] for b in srv.batches.values()] == [
            {"total": 6, "completed": 3, "failed": 3},
            {"total": 3, "completed": 3, "failed": 0},
        ]
        assert all(srv.completed[p] == 1 for p in PROMPTS)
        llm.close()


def test_a_batch_that_fails_validation_fails_its_requests_and_caches_nothing(tmp_path):
    with Loopback(reply=reply, batch_states=("validating", "failed")) as srv:
        llm, batch = answerer(srv, tmp_path, resubmits=1)
        got = batch.batch(requests())
        assert not any(r.ok for r in got) and "failed: scripted failure" in got[0].error
        assert len(srv.batches) == 2 and sum(srv.completed.values()) == 0  # submitted, resubmitted once, never run
        with pytest.raises(CallsFailed, match="6 of 6 calls"):
            refuse(got, "answers")
        assert all(llm.lookup_key(r.key) is None for r in got) and batch.journal() == {}
        llm.close()


KILLED = """
import sys
from olakit.llm import LLM, Endpoint
from olakit.llm.batch import BatchAnswerer
from olakit.llm.request import Request
llm = LLM(Endpoint(sys.argv[1], "m"), cache_dir=sys.argv[2], progress=False)
BatchAnswerer(llm, poll=0.05, progress=False).batch(
    [Request.make(f"question {i}", max_tokens=8) for i in range(6)])
print("finished")
"""


def killed_while_waiting(srv: Loopback, cache) -> None:
    """A process that submits the six requests as a batch, SIGKILLed once the batch is in progress."""
    proc = subprocess.Popen([sys.executable, "-c", KILLED, srv.base_url, str(cache)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=os.environ.copy())  # fmt: skip
    deadline = time.time() + 60
    while time.time() < deadline and not any(b["status"] == "in_progress" for b in srv.batches.values()):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


def test_a_process_killed_while_waiting_leaves_its_batch_and_the_rerun_collects_it(tmp_path):
    # the first batch stays in progress for many polls: the process is killed while it waits
    slow = lambda n: ("validating", *["in_progress"] * 400, "finalizing", "completed")  # noqa: E731
    with Loopback(reply=reply, batch_states=slow) as srv:
        killed_while_waiting(srv, tmp_path / "cache")
        assert len(srv.batches) == 1 and sum(srv.completed.values()) == 0  # submitted, not yet answered
        llm, batch = answerer(srv, tmp_path)
        (batch_id,) = batch.journal()  # the killed process journaled it before waiting
        got = refuse(batch.batch(requests()[:6]), "answers")  # the rerun: polls the same batch, submits nothing
        assert [r.text for r in got] == [f"Answer: {i}" for i in range(6)]
        assert list(srv.batches) == [batch_id] and batch.submitted == []
        assert all(srv.completed[p] == 1 for p in PROMPTS) and batch.journal() == {}
        llm.close()


def test_batch_files_are_split_at_the_providers_limits(monkeypatch):
    from olakit.llm import batch

    monkeypatch.setattr(batch, "MAX_REQUESTS", 3)
    monkeypatch.setattr(batch, "MAX_BYTES", 25)
    lines = [(str(i), b"x" * 10) for i in range(7)]
    # 3 a file by count, and 2 a file by size (10 + 10 <= 25 < 30)
    assert [len(c) for c in _chunks(lines)] == [2, 2, 2, 1]
    monkeypatch.setattr(batch, "MAX_BYTES", 10**6)
    assert [len(c) for c in _chunks(lines)] == [3, 3, 1]


def graded(prompt, request):
    """An answer that depends on the prompt (so the tables have something to compare): a letter from its length."""
    return f"Reasoning ... Answer: {'ABCDE'[len(prompt) % 5]}"


def assert_same_run(online, other):
    """The two run folders hold the same records (answers, verdicts, tokens) and byte-identical tables."""
    from olakit.data.records import load_records

    cols = ["template", "question_id", "raw_output", "extracted", "correct", "prompt_tokens", "completion_tokens"]
    one, two = (load_records(d / "records.parquet")[cols] for d in (online, other))
    assert one.equals(two)
    for table in ("methods", "accuracy"):
        assert (online / "tables" / f"{table}.csv").read_bytes() == (other / "tables" / f"{table}.csv").read_bytes()


def test_olakit_run_batch_gives_the_online_records_and_tables(tmp_path, monkeypatch):
    from olakit.cli import main
    from olakit.runlog import command, read_log

    flags = ["-n", "3", "--templates", "ST,DT", "--strategies", "zero-shot", "--max-tokens", "16"]
    with Loopback(reply=graded) as online, Loopback(reply=graded) as srv:
        monkeypatch.setenv("OLAKIT_MODEL", "m")
        monkeypatch.setenv("OLAKIT_BATCH_POLL", "0.01")
        monkeypatch.setenv("OLAKIT_BASE_URL", online.base_url)
        assert main(["run", "--out", str(tmp_path / "online"), *flags]) == 0
        monkeypatch.setenv("OLAKIT_BASE_URL", srv.base_url)
        monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "batch-cache"))
        assert main(["run", "--batch", "--out", str(tmp_path / "batch"), *flags]) == 0
        assert srv.batches and all(n == 1 for n in srv.completed.values())  # every request of the run batched once
        assert sum(online.completed.values()) == sum(srv.completed.values())  # the same calls, online and batched
    assert_same_run(tmp_path / "online", tmp_path / "batch")
    log, online_log = read_log(tmp_path / "batch"), read_log(tmp_path / "online")
    assert "--batch" in command(log)  # olakit again makes it in batch mode again
    # the run log says which calls were batched: every paid one here, none online
    assert log.calls["answerer"].batched == log.calls["answerer"].paid == online_log.calls["answerer"].paid
    assert online_log.calls["answerer"].batched == 0


def test_batch_mode_is_refused_for_the_embedded_model():
    from olakit.llm.client import connect
    from olakit.llm.endpoint import LLMError

    with pytest.raises(LLMError, match="batch mode needs an endpoint with a Batch API"):
        connect(Endpoint.embedded(), batch=True)


def test_a_sweep_with_the_batch_key_gives_the_online_tables(tmp_path, monkeypatch):
    from pathlib import Path

    from olakit.notebook.sweep import run_sweep

    notebook = Path(__file__).resolve().parent.parent / "notebooks" / "template_count.ipynb"
    entry = (f"notebooks:\n  - notebook: {notebook}\n    parameters: {{source: live, n_questions: 2, "
             "templates: [ST, DT], strategies: [zero-shot], max_tokens: 16}\n")  # fmt: skip
    monkeypatch.setenv("OLAKIT_MODEL", "m")
    monkeypatch.setenv("OLAKIT_BATCH_POLL", "0.01")
    tables = {}
    with Loopback(reply=graded) as online, Loopback(reply=graded) as srv:
        for name, url, extra in (("online", online.base_url, ""), ("batch", srv.base_url, "batch: true\n")):
            monkeypatch.setenv("OLAKIT_BASE_URL", url)
            monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / f"cache-{name}"))
            (tmp_path / f"{name}.yaml").write_text(f"run_id: {name}\n{extra}{entry}")
            index = run_sweep(tmp_path / f"{name}.yaml", runs_dir=tmp_path / "runs", results_dir=tmp_path / "results")
            assert [r.status for r in index.runs] == ["ok"], index.runs
            tables[name] = (
                tmp_path / "results" / name / "template_count" / "tables" / "template_count.csv"
            ).read_bytes()
        assert srv.batches and all(n == 1 for n in srv.completed.values())
        assert sum(srv.completed.values()) == sum(online.completed.values()) > 0
    assert tables["online"] == tables["batch"]


def geek_online(tmp_path, online):
    """(a small GEEK config on a scripted corpus, its records answered online by the loopback ``online``)."""
    from olakit.geek.config import GeekConfig
    from olakit.geek.run import run_geek
    from tests.test_geek import PARAGRAPHS

    corpus = tmp_path / "albany.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in PARAGRAPHS))
    cfg = GeekConfig(n_questions=2, rows=("+De", "+RE"), corpus=str(corpus), k=1)
    with LLM(Endpoint(online.base_url, "m"), cache_dir=tmp_path / "online", progress=False) as llm:
        return cfg, run_geek(cfg, llm=llm).records


def test_geek_in_batch_mode_gives_the_online_records_round_by_round(tmp_path):
    from olakit.geek.run import run_geek
    from tests.test_geek import scripted

    with Loopback(reply=scripted) as online, Loopback(reply=scripted) as srv:
        cfg, want = geek_online(tmp_path, online)
        llm, batch = answerer(srv, tmp_path)
        got = run_geek(cfg, llm=batch).records
        llm.close()
        assert len(srv.batches) > 1  # GEEK's rounds: one batch each
        assert all(n == 1 for n in srv.completed.values())
    cols = ["row", "question_id", "raw_output", "extracted", "correct"]
    assert want[cols].equals(got[cols])
    # every step of every trace the same, but its latency: a batched call has none of its own
    import re

    no_latency = lambda t: re.sub(r'"latency": [^,}]+', '"latency": _', t)  # noqa: E731
    assert want["trace"].map(no_latency).equals(got["trace"].map(no_latency))
    assert '"latency": null' in got["trace"].iloc[0] and '"latency": null' not in want["trace"].iloc[0]


def test_the_plan_gives_each_stage_a_batch_round_and_both_prices():
    from olakit.method import Stage
    from olakit.plan import describe

    stages = [Stage("question types", 10, 8, True), Stage("answers", 50, 512, True)]
    endpoint = Endpoint("https://api.example/v1", "gpt-4o-mini")  # $0.60 per million completion tokens
    plan = describe(stages, endpoint, batch=True)
    ceiling = 10 * 8 + 50 * 512  # 25,680 completion tokens at most
    online = ceiling * 0.60 / 1e6  # $0.0154 -> "$0.02"; half at the batch rate -> "$0.01"
    assert plan.splitlines()[0] == "planned: 60 calls to gpt-4o-mini, in 2 batch rounds"
    assert "batch round 1" in plan.splitlines()[1] and "batch round 2" in plan.splitlines()[2]
    assert f"at most {ceiling:,}" in plan and f"${online:,.2f} at its online completion price" in plan
    assert f"${online / 2:,.2f} at the batch rate" in plan
    assert "batch round" not in describe(stages, endpoint)  # online: the batch price is shown, no rounds


def test_cancel_then_rerun_collects_what_the_batch_finished_and_resubmits_the_rest(tmp_path, monkeypatch, capsys):
    from olakit.cli import main

    slow = lambda n: ("validating", *["in_progress"] * 400, "completed") if n == 1 else ("validating", "completed")  # noqa: E731
    with Loopback(reply=reply, batch_states=slow) as srv:
        monkeypatch.setenv("OLAKIT_BASE_URL", srv.base_url)
        monkeypatch.setenv("OLAKIT_MODEL", "m")
        monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "cache"))
        killed_while_waiting(srv, tmp_path / "cache")
        (first,) = srv.batches
        assert main(["batch", "status"]) == 0
        assert f"{first}: in_progress, 0 of 6 requests done" in capsys.readouterr().out
        assert main(["batch", "cancel"]) == 0
        assert f"asked to cancel 1 batch: {first}" in capsys.readouterr().out
        llm, batch = answerer(srv, tmp_path)
        got = refuse(batch.batch(requests()[:6]), "answers")  # the cancelled batch's half, then the rest alone
        assert [r.text for r in got] == [f"Answer: {i}" for i in range(6)]
        assert [b["request_counts"]["total"] for b in srv.batches.values()] == [6, 3]
        assert all(srv.completed[p] == 1 for p in PROMPTS) and batch.journal() == {}
        llm.close()


def test_two_processes_on_one_cache_submit_each_request_once(tmp_path):
    """Two answerers with their own connections to one cache ask for the same requests at the same moment: the
    journal's lock lets one submit; the other finds its batch in the journal and collects it."""
    import threading

    slow = ("validating", *["in_progress"] * 20, "completed")
    with Loopback(reply=reply, batch_states=slow) as srv:
        pairs = [answerer(srv, tmp_path) for _ in range(2)]
        got: dict = {}
        threads = [threading.Thread(target=lambda i=i: got.update({i: pairs[i][1].batch(requests())})) for i in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert [r.text for r in got[0]] == [r.text for r in got[1]] == [f"Answer: {i}" for i in (0, 1, 2, 3, 4, 5, 0)]
        assert len(srv.batches) == 1 and all(srv.completed[p] == 1 for p in PROMPTS)
        assert sorted(len(a.submitted) for _, a in pairs) == [0, 1]
        for llm, _ in pairs:
            llm.close()


def test_the_journal_and_its_lock_in_a_shared_redis(tmp_path, monkeypatch):
    """The same with the answer cache in a real redis-server: one batch, each request once, the journal empty after."""
    import threading

    from tests.test_cluster import start_redis

    proc, url = start_redis(tmp_path)
    try:
        monkeypatch.setenv("OLAKIT_CACHE_URL", url)
        slow = ("validating", *["in_progress"] * 20, "completed")
        with Loopback(reply=reply, batch_states=slow) as srv:
            llms = [LLM(Endpoint(srv.base_url, "m"), progress=False) for _ in range(2)]  # the cache: $OLAKIT_CACHE_URL
            pairs = [(llm, BatchAnswerer(llm, poll=0.01, progress=False)) for llm in llms]
            got: dict = {}
            threads = [threading.Thread(target=lambda i=i: got.update({i: pairs[i][1].batch(requests())}))
                       for i in (0, 1)]  # fmt: skip
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
            assert [r.text for r in got[0]] == [r.text for r in got[1]]
            assert len(srv.batches) == 1 and all(srv.completed[p] == 1 for p in PROMPTS)
            assert pairs[0][1].journal() == {} and type(pairs[0][0].answers).__name__ == "RedisCache"
            for llm, _ in pairs:
                llm.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# -- offline batch files: olakit batch export -> an engine that reads the OpenAI batch format -> olakit batch ingest


def through_provider(srv, requests_file, out_file):
    """The exported file run as it is by a server that implements the OpenAI batch format (files, batches), through
    the openai client; its output and error files written as one results file, as vllm run-batch writes it."""
    import openai

    client = openai.OpenAI(base_url=srv.base_url, api_key="none")
    upload = client.files.create(file=("requests.jsonl", requests_file.read_bytes()), purpose="batch")
    b = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h")
    while b.status not in ("completed", "failed", "expired", "cancelled"):
        b = client.batches.retrieve(b.id)
    assert b.status == "completed", b
    text = "".join(client.files.content(f).text for f in (b.output_file_id, b.error_file_id) if f)
    out_file.write_text(text)
    return [json.loads(line) for line in text.splitlines()]


OFFLINE = "http://127.0.0.1:9/v1"
"""The endpoint of an offline run: where the model would be served. Nothing listens there: a call would fail."""


def test_export_run_the_file_ingest_completes_the_run_with_no_call_and_the_online_tables(tmp_path, monkeypatch, capsys):
    from olakit.cli import EXPORTED, main
    from olakit.runlog import read_log

    flags = ["-n", "3", "--templates", "ST,DT", "--strategies", "zero-shot", "--max-tokens", "16"]
    with Loopback(reply=graded) as online, Loopback(reply=graded) as engine:
        monkeypatch.setenv("OLAKIT_MODEL", "m")
        monkeypatch.setenv("OLAKIT_BASE_URL", online.base_url)
        monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "online-cache"))
        assert main(["run", "--out", str(tmp_path / "online"), *flags]) == 0
        monkeypatch.setenv("OLAKIT_BASE_URL", OFFLINE)
        monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "cache"))
        export = ["batch", "export", "--requests", str(tmp_path / "requests.jsonl"), "run", "--out",
                  str(tmp_path / "offline"), *flags]  # fmt: skip
        exported, rounds = [], 0
        capsys.readouterr()
        while (rc := main(export)) == EXPORTED:
            rounds += 1
            assert "wrote" in capsys.readouterr().err and not (tmp_path / "offline" / "records.parquet").exists()
            lines = [json.loads(x) for x in (tmp_path / "requests.jsonl").read_text().splitlines()]
            assert all(x["method"] == "POST" and x["url"] == "/v1/chat/completions" for x in lines)
            assert all(x["body"]["model"] == "m" for x in lines)
            exported += [x["custom_id"] for x in lines]
            assert main(["batch", "status"]) == 0  # the export is journaled: status shows it, without a provider
            assert f"export: exported to {tmp_path / 'requests.jsonl'}, not yet ingested, 0 of {len(lines)}" in (
                capsys.readouterr().out
            )
            through_provider(engine, tmp_path / "requests.jsonl", tmp_path / f"results-{rounds}.jsonl")
            assert main(["batch", "ingest", str(tmp_path / f"results-{rounds}.jsonl")]) == 0
            assert f"ingested {len(lines)} answers" in capsys.readouterr().out
            assert rounds < 5
        assert rc == 0 and rounds >= 1
        assert len(exported) == len(set(exported)) == sum(online.completed.values())  # each request once, all of them
        assert all(n == 1 for n in engine.completed.values())
    log = read_log(tmp_path / "offline")
    assert log.calls["answerer"].paid == 0 and log.calls["answerer"].cached == len(exported)
    assert_same_run(tmp_path / "online", tmp_path / "offline")


def offline_answerer(tmp_path, model="m"):
    llm = LLM(Endpoint(OFFLINE, model), cache_dir=tmp_path / "cache", progress=False)
    return llm, BatchAnswerer(llm, progress=False, export=tmp_path / "requests.jsonl")


def exported_then_run(tmp_path, engine, **kw):
    """Export requests(), run the file on the engine; (answerer, its LLM, the results file's lines)."""
    from olakit.llm.batch import Exported

    llm, batch = offline_answerer(tmp_path, **kw)
    with pytest.raises(Exported, match=r"wrote 6 requests .*`vllm run-batch -i "):
        batch.batch(requests())
    rows = through_provider(engine, tmp_path / "requests.jsonl", tmp_path / "results.jsonl")
    return batch, llm, rows


def test_ingest_refuses_results_it_did_not_export_and_stores_nothing(tmp_path):
    from olakit.errors import DataError

    with Loopback(reply=reply) as engine:
        batch, llm, rows = exported_then_run(tmp_path, engine)
        good = [json.dumps(r) for r in rows]
        foreign = dict(rows[0], custom_id="f" * 64)
        other_model = json.loads(good[1])
        other_model["response"]["body"]["model"] = "another-model"
        bad = tmp_path / "bad.jsonl"
        bad.write_text("\n".join([json.dumps(foreign), json.dumps(other_model), "{not json", *good[2:]]) + "\n")
        with pytest.raises(DataError) as err:
            batch.ingest(bad)
        message = str(err.value)
        assert "3 of 7 lines refused, nothing ingested" in message
        assert "line 1: custom_id ffffffffffffffff... is no request exported for this endpoint" in message
        assert "line 2: answered by 'another-model', not 'm'" in message and "line 3: not JSON" in message
        assert all(llm.lookup_key(r["custom_id"]) is None for r in rows) and len(batch.exported()) == 6
        # another endpoint's answerer (another model name) exported none of these: it takes none
        llm2, other = offline_answerer(tmp_path, model="m2")
        with pytest.raises(DataError, match="6 of 6 lines refused"):
            other.ingest(tmp_path / "results.jsonl")
        llm2.close()
        # the engine's own file goes in whole; the same file twice is "already there", not an error
        assert batch.ingest(tmp_path / "results.jsonl") == {"answers": 6, "failed": 0, "already": 0}
        assert batch.exported() == set() and batch.journal() == {}
        assert batch.ingest(tmp_path / "results.jsonl") == {"answers": 0, "failed": 0, "already": 6}
        assert [r.text for r in batch.batch(requests())] == [f"Answer: {i}" for i in (0, 1, 2, 3, 4, 5, 0)]
        llm.close()


def test_a_request_the_engine_failed_is_not_cached_and_the_next_export_writes_it_alone(tmp_path):
    from olakit.llm.batch import Exported

    fails = lambda prompt, attempt: "scripted 500" if prompt == PROMPTS[2] and attempt == 1 else None  # noqa: E731
    with Loopback(reply=reply, batch_errors=fails) as engine:
        batch, llm, rows = exported_then_run(tmp_path, engine)
        assert batch.ingest(tmp_path / "results.jsonl") == {"answers": 5, "failed": 1, "already": 0}
        (failed,) = batch.exported()  # still waiting; never cached
        assert llm.lookup_key(failed) is None
        with pytest.raises(Exported, match="wrote 1 request "):
            batch.batch(requests())
        (line,) = (tmp_path / "requests.jsonl").read_text().splitlines()
        assert json.loads(line)["custom_id"] == failed
        through_provider(engine, tmp_path / "requests.jsonl", tmp_path / "results.jsonl")
        assert batch.ingest(tmp_path / "results.jsonl") == {"answers": 1, "failed": 0, "already": 0}
        assert [r.text for r in batch.batch(requests())] == [f"Answer: {i}" for i in (0, 1, 2, 3, 4, 5, 0)]
        assert all(engine.completed[p] == 1 for p in PROMPTS)
        llm.close()


@pytest.mark.real_model
def test_exported_requests_answered_by_the_embedded_model_complete_the_run_from_the_cache(tmp_path, monkeypatch):
    """The same path with real answers, by the one documented command (docs/batch.md): `olakit batch run` answers the
    exported file with the embedded model, `olakit batch ingest` takes its output with no --engine-model (the
    server names the model as `olakit serve` and every log do: one name), and the run then completes with no call,
    its records holding exactly the engine's answers."""
    import json

    from olakit.cli import EXPORTED, main
    from olakit.data.records import load_records
    from olakit.llm.local import embedded_spec
    from olakit.runlog import read_log

    monkeypatch.delenv("OLAKIT_BASE_URL", raising=False)  # the embedded model's identity: its weights
    monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "cache"))
    flags = ["-n", "2", "--templates", "ST", "--strategies", "zero-shot", "--max-tokens", "24"]
    export = ["batch", "export", "--requests", str(tmp_path / "requests.jsonl"), "run", "--out",
              str(tmp_path / "run"), *flags]  # fmt: skip
    answers, rounds = {}, 0
    while (rc := main(export)) == EXPORTED:
        rounds += 1
        assert main(["batch", "run", str(tmp_path / "requests.jsonl"), "--out", str(tmp_path / "out.jsonl")]) == 0
        rows = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
        answers |= {r["custom_id"]: r["response"]["body"]["choices"][0]["message"]["content"] for r in rows}
        assert {r["response"]["body"]["model"] for r in rows} == {embedded_spec()["name"]}  # one name
        assert main(["batch", "ingest", str(tmp_path / "out.jsonl")]) == 0
        assert rounds < 5
    assert rc == 0 and answers
    log = read_log(tmp_path / "run")
    assert log.calls["answerer"].paid == 0 and log.calls["answerer"].unique_prompts == len(answers)
    records = load_records(tmp_path / "run" / "records.parquet")
    assert set(records["raw_output"]) <= set(answers.values())


def test_geek_exports_one_round_at_a_time_and_completes_with_the_online_records(tmp_path):
    from olakit.geek.run import run_geek
    from olakit.llm.batch import Exported
    from tests.test_geek import scripted

    with Loopback(reply=scripted) as online, Loopback(reply=scripted) as engine:
        cfg, want = geek_online(tmp_path, online)
        llm, batch = offline_answerer(tmp_path)
        rounds, got = 0, None
        while got is None and rounds < 40:
            try:
                got = run_geek(cfg, llm=batch).records
            except Exported:
                rounds += 1
                through_provider(engine, tmp_path / "requests.jsonl", tmp_path / "results.jsonl")
                assert batch.ingest(tmp_path / "results.jsonl")["failed"] == 0
        llm.close()
        assert rounds > 2 and all(n == 1 for n in engine.completed.values())  # GEEK's rounds, each request once
        assert sum(engine.completed.values()) == sum(online.completed.values())
    cols = ["row", "question_id", "raw_output", "extracted", "correct"]
    assert want[cols].equals(got[cols])
