"""Beyond one machine, tested for real: a real redis-server on 127.0.0.1 as the shared answer cache, and a Dask
LocalCluster of 2 worker processes running a sweep against the loopback server."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from olakit.errors import DataError
from olakit.llm import LLM, Endpoint, Request
from olakit.llm import cache as answer_cache
from olakit.llm.cache import AnswerCache, CacheError, RedisCache, cache_location, copy_cache
from olakit.llm.loopback import Loopback
from olakit.notebook.sweep import run_sweep

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(folder, port: int | None = None):
    """A real redis-server (Debian's package; `make test` installs it), without persistence."""
    exe = shutil.which("redis-server")
    assert exe, "redis-server is not installed: `make redis` (run by `make test`) installs Debian's package"
    port = port or free_port()
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import redis

    client = redis.Redis(port=port)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    client.close()
    return proc, f"redis://127.0.0.1:{port}/0"


@pytest.fixture
def redis_url(tmp_path):
    proc, url = start_redis(tmp_path)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def test_processes_sharing_redis_pay_each_prompt_once_and_errors_are_never_cached(redis_url, monkeypatch):
    script = textwrap.dedent("""
        import sys
        from olakit.llm import LLM, Endpoint, Request
        with LLM(Endpoint(sys.argv[1], "fake"), concurrency=4, progress=False) as llm:
            res = llm.batch([Request.make(f"shared {i}") for i in range(12)])
        print(sum(r.ok for r in res), sum(r.cached for r in res))
    """)
    env = {**os.environ, "OLAKIT_CACHE_URL": redis_url}
    with Loopback(delay=0.3) as srv:
        cmd = [sys.executable, "-c", script, srv.base_url]
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env) for _ in range(3)]
        outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert all(int(o[0]) == 12 for o in outs)
    assert srv.requests == 12 and set(srv.per_prompt.values()) == {1}  # three processes, each prompt paid once
    assert sum(int(o[1]) for o in outs) == 24
    import redis

    store = redis.Redis.from_url(redis_url)
    assert len(list(store.scan_iter("olakit:answer:*"))) == 12 and not list(store.scan_iter("olakit:inflight:*"))
    # an error is never stored as an answer
    monkeypatch.setenv("OLAKIT_CACHE_URL", redis_url)
    with Loopback(fault_rate=1.0, faults=("500",)) as bad, LLM(Endpoint(bad.base_url, "fake"), progress=False) as llm:
        llm.max_attempts, llm.backoff = 2, 0.01
        res = llm.batch([Request.make("fails")])
    assert not res[0].ok and len(list(store.scan_iter("olakit:answer:*"))) == 12
    assert not list(store.scan_iter("olakit:inflight:*"))


def test_a_fast_endpoint_at_high_concurrency_stores_every_answer_over_few_connections(redis_url, monkeypatch):
    # answers arriving faster than one store each can go: they share pipelined writes, so the connections stay
    # near one per concurrent call (redis-py's pool holds 100; one store each would exceed it and fail calls)
    import redis

    monkeypatch.setenv("OLAKIT_CACHE_URL", redis_url)
    store = redis.Redis.from_url(redis_url)
    before = store.info("stats")["total_connections_received"]
    reqs = [Request.make(f"fast {i}") for i in range(3000)]
    with Loopback() as srv, LLM(Endpoint(srv.base_url, "fake"), concurrency=64, progress=False) as llm:
        res = llm.batch(reqs)
    assert all(r.ok and not r.cached for r in res) and srv.requests == 3000
    assert len(list(store.scan_iter("olakit:answer:*", count=1000))) == 3000
    assert not list(store.scan_iter("olakit:inflight:*"))
    opened = store.info("stats")["total_connections_received"] - before - 1  # less this test's own
    assert opened <= 64 + 8, opened


def test_a_claim_whose_owner_died_is_taken_over(redis_url, monkeypatch):
    import asyncio

    monkeypatch.setattr(answer_cache, "CLAIM_LEASE", 0.6)
    waits = []  # every poll of a waiting claim: counted, so "at once" is a count, not a time on a busy machine
    real_sleep = asyncio.sleep

    async def counted_sleep(seconds):
        waits.append(seconds)
        await real_sleep(seconds)

    monkeypatch.setattr(answer_cache.asyncio, "sleep", counted_sleep)
    cache = RedisCache(redis_url)
    host = socket.gethostname()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    # the owner was a process of this machine that no longer exists: taken over at once
    cache.store.set("olakit:inflight:k1", f"{host}:{int(dead.stdout)}", px=60_000)
    assert asyncio.run(cache.claim("k1", 60)) is None and waits == []  # no poll at all
    assert cache.store.get("olakit:inflight:k1").decode() == cache.owner
    cache.release("k1")
    assert cache.store.get("olakit:inflight:k1") is None
    # the owner was on another machine and stopped renewing its lease: taken over once the lease lapses
    cache.store.set("olakit:inflight:k2", "elsewhere:123", px=600)
    t0 = time.perf_counter()
    assert asyncio.run(cache.claim("k2", 60)) is None
    assert 0.3 < time.perf_counter() - t0 < 3
    # a live owner elsewhere that stores the answer: the waiting claim returns it and calls nothing
    cache.store.set("olakit:inflight:k3", "elsewhere:456", px=10_000)
    threading.Timer(0.3, lambda: cache.set("k3", {"text": "done"})).start()
    assert asyncio.run(cache.claim("k3", 60)) == {"text": "done"}
    cache.close()


def test_redis_going_away_fails_calls_as_errors_and_the_run_resumes(tmp_path, monkeypatch):
    port = free_port()
    proc, url = start_redis(tmp_path, port)
    monkeypatch.setenv("OLAKIT_CACHE_URL", url)
    reqs = [Request.make(f"q{i}") for i in range(6)]
    with Loopback() as srv:
        llm = LLM(Endpoint(srv.base_url, "fake"), progress=False)
        first = llm.batch(reqs[:3])
        assert all(r.ok and not r.cached for r in first)
        proc.terminate()
        proc.wait(timeout=10)
        gone = llm.batch(reqs)  # Redis is away: every call fails as an error, nothing is paid
        assert [r.ok for r in gone] == [False] * 6 and "answer cache unavailable" in gone[0].error
        assert srv.requests == 3
        proc, _ = start_redis(tmp_path, port)  # back, empty (no persistence): the run resumes
        again = llm.batch(reqs)
        llm.close()
    proc.terminate()
    assert all(r.ok for r in again) and srv.requests == 9


def test_bad_cache_urls_and_an_unreachable_redis_are_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("OLAKIT_CACHE_URL", "http://127.0.0.1:6379/0")
    with pytest.raises(CacheError, match=r"scheme 'http' is not a Redis URL; write redis://HOST:6379/0"):
        LLM(Endpoint("http://127.0.0.1:9/v1", "fake"))
    monkeypatch.setenv("OLAKIT_CACHE_URL", f"redis://:secret@127.0.0.1:{free_port()}/0")
    with pytest.raises(
        CacheError, match=r"redis://:\*\*\*@127\.0\.0\.1:\d+/0 \(OLAKIT_CACHE_URL\) is unreachable"
    ) as e:
        LLM(Endpoint("http://127.0.0.1:9/v1", "fake"))
    assert "secret" not in str(e.value)
    with pytest.raises(CacheError, match="no answer cache there"):
        copy_cache(cache_location(tmp_path / "none"), cache_location("redis://127.0.0.1:1/0"))


def test_copy_a_diskcache_into_redis_and_back(redis_url, tmp_path):
    disk = AnswerCache(tmp_path / "disk")
    answers = {f"key{i}": {"text": f"answer {i}", "prompt_tokens": i, "completion_tokens": 1} for i in range(1500)}
    for k, v in answers.items():
        disk.set(k, v)
    disk.store.set("inflight:key1", 123)  # a claim is not an answer: never copied
    disk.close()
    out = subprocess.run(
        [sys.executable, "-m", "olakit.cli", "cache", "copy", str(tmp_path / "disk"), redis_url],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and f"copied 1500 answers from {tmp_path / 'disk'} to {redis_url}" in out.stdout
    red = RedisCache(redis_url)
    assert sorted(red.keys()) == sorted(answers) and red.get("key7") == answers["key7"]
    assert copy_cache(red, cache_location(tmp_path / "back")) == 1500
    back = AnswerCache(tmp_path / "back")
    assert {k: back.get(k) for k in back.keys()} == answers
    red.close()
    back.close()


SWEEP = """\
run_id: {run_id}
parallel: 2
executor: {executor}
notebooks:
  - notebook: notebooks/notes_count.ipynb
    parameters: {{source: live, n_questions: 2, strategies: [zero-shot, random], n_notes: [1], max_tokens: 16,
                 n_boot: 100}}
  - notebook: notebooks/template_count.ipynb
    parameters: {{source: live, n_questions: 2, templates: [turbo, ST], strategies: [zero-shot, random],
                 n_notes: [1], max_tokens: 16}}
"""


def tables(results, run_id):
    """Every table a run wrote, as bytes, by run and file name."""
    root = results / run_id
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.glob("*/tables/*.csv"))}


def sweep(tmp_path, run_id, executor):
    spec = tmp_path / f"{run_id}.yaml"
    spec.write_text(SWEEP.format(run_id=run_id, executor=executor))
    return run_sweep(spec, runs_dir=tmp_path / "runs", results_dir=tmp_path / "results")


def test_a_dask_sweep_with_a_redis_cache_matches_the_local_executor(redis_url, tmp_path, monkeypatch):
    with Loopback(delay=0.05) as srv:
        monkeypatch.setenv("OLAKIT_BASE_URL", srv.base_url)
        monkeypatch.setenv("OLAKIT_MODEL", "fake")
        local = sweep(tmp_path, "local", "local")  # diskcache, local processes
        assert [r["status"] for r in local["runs"]] == ["ok", "ok"]
        paid_locally = srv.requests
        monkeypatch.setenv("OLAKIT_CACHE_URL", redis_url)
        dask = sweep(tmp_path, "dask", "dask")  # Redis, 2 Dask worker processes: every prompt paid again, once
        assert [r["status"] for r in dask["runs"]] == ["ok", "ok"], [r["error"] for r in dask["runs"]]
        assert paid_locally == len(srv.per_prompt)  # calls = unique prompts, locally ...
        assert srv.requests == 2 * paid_locally and set(srv.per_prompt.values()) == {2}  # ... and across workers
        assert all(r["worker"].startswith("tcp://127.0.0.1:") for r in dask["runs"])
        assert dask["executor"] == "dask" and dask["scheduler"] == "LocalCluster"
        again = sweep(tmp_path, "dask-again", "dask")  # a rerun makes no call
        assert srv.requests == 2 * paid_locally and again["calls"]["paid"] == 0
    results = tmp_path / "results"
    assert tables(results, "dask") == tables(results, "local") == tables(results, "dask-again")
    assert len(tables(results, "local")) == 2  # one table per notebook


KILL_SWEEP = """\
run_id: {run_id}
parallel: 2
executor: {executor}
notebooks:
  - notebook: notebooks/template_count.ipynb
    parameters: {{source: live, n_questions: 4, templates: [turbo, ST, DT], strategies: [zero-shot, random],
                 n_notes: [1], max_tokens: 16}}
  - notebook: notebooks/notes_count.ipynb
    parameters: {{source: live, n_questions: 4, strategies: [zero-shot, retrieval], n_notes: [1, 2],
                 max_tokens: 16, n_boot: 100}}
"""


def test_a_worker_killed_mid_sweep_is_rerun_and_nothing_is_paid_twice_but_calls_in_flight(
    redis_url, tmp_path, monkeypatch
):
    import psutil

    with Loopback(delay=0.4) as srv:
        monkeypatch.setenv("OLAKIT_BASE_URL", srv.base_url)
        monkeypatch.setenv("OLAKIT_MODEL", "fake")
        (tmp_path / "local.yaml").write_text(KILL_SWEEP.format(run_id="local", executor="local"))
        run_sweep(tmp_path / "local.yaml", runs_dir=tmp_path / "runs", results_dir=tmp_path / "results")
        reference = dict(srv.per_prompt)
        srv.per_prompt.clear()
        monkeypatch.setenv("OLAKIT_CACHE_URL", redis_url)
        (tmp_path / "dask.yaml").write_text(KILL_SWEEP.format(run_id="dask", executor="dask"))
        killed = {}

        def kill_a_worker():
            # once calls are under way, kill a Dask worker process that runs a notebook, with its kernel, as
            # when its machine goes down; the calls in flight at that moment are the only ones paid twice
            srv.wait_completed(len(reference) // 3 + sum(reference.values()), timeout=120)
            me = psutil.Process()
            kernels = [p for p in me.children(recursive=True) if "ipykernel" in " ".join(p.cmdline())]
            victim = next(k.parent() for k in kernels if k.parent().pid != me.pid)  # a worker running a notebook
            family = [victim, *victim.children(recursive=True)]
            killed["in_flight"] = srv.active
            for p in family:
                p.send_signal(signal.SIGKILL)
            killed["pid"] = victim.pid

        threading.Thread(target=kill_a_worker, daemon=True).start()
        index = run_sweep(tmp_path / "dask.yaml", runs_dir=tmp_path / "runs", results_dir=tmp_path / "results")
    assert "pid" in killed, "no worker was killed"
    assert [r["status"] for r in index["runs"]] == ["ok", "ok"], [r["error"] for r in index["runs"]]
    assert set(srv.per_prompt) == set(reference)  # every prompt of the sweep was answered
    twice = sum(n - 1 for n in srv.per_prompt.values())
    reruns = {r["name"]: r["worker"] for r in index["runs"]}
    print(f"killed worker pid {killed['pid']}; {killed['in_flight']} calls in flight, {twice} paid twice; {reruns}")
    assert twice <= killed["in_flight"]  # only calls in flight at the kill were paid again
    results = tmp_path / "results"
    assert tables(results, "dask") == tables(results, "local")


def test_cluster_input_errors_come_before_anything_runs(tmp_path, monkeypatch):
    spec = tmp_path / "s.yaml"
    spec.write_text(SWEEP.format(run_id="x", executor="local"))
    with pytest.raises(DataError, match="is for the dask executor"):
        run_sweep(spec, scheduler="tcp://127.0.0.1:1", runs_dir=tmp_path / "r", results_dir=tmp_path / "o")
    with pytest.raises(DataError, match="need an endpoint they all reach"):
        run_sweep(
            spec, executor="dask", scheduler="tcp://127.0.0.1:1", runs_dir=tmp_path / "r", results_dir=tmp_path / "o"
        )
    monkeypatch.setenv("OLAKIT_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OLAKIT_MODEL", "fake")
    with pytest.raises(DataError, match="need a cache they all share: set OLAKIT_CACHE_URL"):
        run_sweep(
            spec, executor="dask", scheduler="tcp://127.0.0.1:1", runs_dir=tmp_path / "r", results_dir=tmp_path / "o"
        )
    monkeypatch.setenv("OLAKIT_CACHE_URL", "redis://127.0.0.1:1/0")
    with pytest.raises(DataError, match=r"the Dask scheduler at tcp://127\.0\.0\.1:\d+ is unreachable"):
        run_sweep(
            spec,
            executor="dask",
            scheduler=f"tcp://127.0.0.1:{free_port()}",
            runs_dir=tmp_path / "r",
            results_dir=tmp_path / "o",
        )
    with pytest.raises(DataError, match="give its address as tcp://HOST:8786"):
        run_sweep(
            spec, executor="dask", scheduler="127.0.0.1:8786", runs_dir=tmp_path / "r", results_dir=tmp_path / "o"
        )
    bad = tmp_path / "bad.yaml"
    bad.write_text(SWEEP.format(run_id="x", executor="slurm"))
    with pytest.raises(DataError, match="executor 'slurm'; use one of local, dask"):
        run_sweep(bad, runs_dir=tmp_path / "r", results_dir=tmp_path / "o")
    assert not (tmp_path / "r" / "x").exists() or not any((tmp_path / "r" / "x").iterdir())


def test_a_worker_without_the_notebooks_or_data_is_named_before_anything_runs(tmp_path, monkeypatch):
    from dask.distributed import Client, LocalCluster

    from olakit.notebook import cluster

    with Loopback() as srv:
        monkeypatch.setenv("OLAKIT_BASE_URL", srv.base_url)
        monkeypatch.setenv("OLAKIT_MODEL", "fake")
        spec = tmp_path / "s.yaml"
        spec.write_text(SWEEP.format(run_id="x", executor="dask"))
        # the workers of this cluster have no data: their OLAKIT_DATA_DIR names an empty folder
        (tmp_path / "empty").mkdir()
        lc = LocalCluster(
            n_workers=1, threads_per_worker=1, dashboard_address=None, env={"OLAKIT_DATA_DIR": str(tmp_path / "empty")}
        )
        monkeypatch.setattr(cluster, "connect", lambda scheduler, workers: (Client(lc), None))
        with pytest.raises(DataError, match=r"worker tcp://127\.0\.0\.1:\d+: no data for aqua, .* in .*empty"):
            run_sweep(spec, runs_dir=tmp_path / "r", results_dir=tmp_path / "o")
        lc.close()
        assert srv.requests == 0
    assert json.dumps(sorted(p.name for p in (tmp_path / "r" / "x").iterdir())) == "[]"
