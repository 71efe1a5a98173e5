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

from olakit.config import ConfigError
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


def start_redis(folder, port: int | None = None, *options: str, password: str | None = None):
    """A real redis-server (Debian's package; `make test` installs it), without persistence unless ``options`` ask
    for it (e.g. "--appendonly", "yes"), and with ``requirepass`` when a password is given."""
    exe = shutil.which("redis-server")
    assert exe, "redis-server is not installed: `make redis` (run by `make test`) installs Debian's package"
    port = port or free_port()
    settings = ["--save", "", "--appendonly", "no", *options, *(["--requirepass", password] if password else [])]
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), *settings],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import redis

    client = redis.Redis(port=port, password=password)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    client.close()
    return proc, f"redis://{f':{password}@' if password else ''}127.0.0.1:{port}/0"


THREADS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_")
"""What Dask's nannies write, with its default config, into the environment of the process that starts them
(pre-spawn-environ); olakit's LocalClusters (olakit.notebook.cluster.local_cluster) give them to the workers only."""


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
    # answers arriving faster than one store each can go: they share pipelined round trips with the claims, so the
    # connections stay few (redis-py's pool holds 100; one store each would exceed it and fail calls)
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
    # claims, stores and releases go in one pipeline per round trip: one connection for the event loop, one for the
    # first look-up (and renewals); one claim each once opened up to one connection per call in flight
    assert opened <= 3, opened


def test_a_claim_whose_owner_died_is_taken_over(redis_url, monkeypatch):
    import asyncio

    from olakit.llm.cache import claim_key, owner_token

    monkeypatch.setattr(answer_cache, "CLAIM_LEASE", 0.6)
    waits = []  # every poll of a waiting claim: counted, so "at once" is a count, not a time on a busy machine
    real_sleep = asyncio.sleep

    async def counted_sleep(seconds):
        waits.append(seconds)
        await real_sleep(seconds)

    monkeypatch.setattr(answer_cache.asyncio, "sleep", counted_sleep)
    cache = RedisCache(redis_url)
    host, boot, ns, _, _ = owner_token().split("|")
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)  # fmt: skip
    # the owner was a process of this machine, kernel and pid namespace that no longer exists: taken over at once
    cache.store.set(claim_key("k1"), f"{host}|{boot}|{ns}|{dead}|abc", px=60_000)
    assert asyncio.run(cache.claim("k1", 60)) is None and waits == []  # no poll at all
    assert cache.store.get(claim_key("k1")).decode() == cache.owner
    cache.release("k1")
    assert cache.store.get(claim_key("k1")) is None
    # the same hostname and pid in another pid namespace (a container), or an older olakit's "host:pid": their
    # death cannot be told from here, so their leases decide
    for n, owner in enumerate((f"{host}|{boot}|{int(ns) + 1}|{dead}|abc", f"{host}:{dead}")):
        waits.clear()
        cache.store.set(claim_key(f"ns{n}"), owner, px=600)
        assert asyncio.run(cache.claim(f"ns{n}", 60)) is None and len(waits) >= 3  # waited for the lease
    # the owner was on another machine and stopped renewing its lease: taken over once the lease lapses
    cache.store.set(claim_key("k2"), "elsewhere|b|1|123|abc", px=600)
    waits.clear()
    assert asyncio.run(cache.claim("k2", 60)) is None
    assert len(waits) >= 3 and sum(waits) < 60  # polled until the lease lapsed, then took over: never the timeout
    # a live owner elsewhere that stores the answer: the waiting claim returns it and calls nothing
    cache.store.set(claim_key("k3"), "elsewhere|b|1|456|abc", px=10_000)
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
        assert [r.status for r in local.runs] == ["ok", "ok"]
        paid_locally = srv.requests
        monkeypatch.setenv("OLAKIT_CACHE_URL", redis_url)
        threads = {name: os.environ.get(name) for name in THREADS}
        dask = sweep(tmp_path, "dask", "dask")  # Redis, 2 Dask worker processes: every prompt paid again, once
        # its LocalCluster's nannies once wrote OMP_NUM_THREADS=1 and more into this process, never undone (every later
        # process started here, torch's embedder in the docs' GEEK blocks, ran on one thread): now the workers' only
        assert {name: os.environ.get(name) for name in THREADS} == threads
        assert [r.status for r in dask.runs] == ["ok", "ok"], [r.error for r in dask.runs]
        assert paid_locally == len(srv.per_prompt)  # calls = unique prompts, locally ...
        assert srv.requests == 2 * paid_locally and set(srv.per_prompt.values()) == {2}  # ... and across workers
        assert all(r.worker.startswith("tcp://127.0.0.1:") for r in dask.runs)
        assert dask.executor == "dask" and dask.scheduler == "LocalCluster"
        again = sweep(tmp_path, "dask-again", "dask")  # a rerun makes no call
        assert srv.requests == 2 * paid_locally and again.calls["paid"] == 0
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
    import redis

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
            before = srv.active
            for p in family:
                p.send_signal(signal.SIGKILL)
            # the calls the server holds at the kill (each takes 0.4 s): read after the signal too, since a stage's
            # next calls can start between the first reading and the kill (once: 0 read before, 8 in flight)
            killed["in_flight"] = max(before, srv.active)
            # and the answers the server had sent that no kernel had stored yet (each is stored as it arrives, in the
            # background: on a busy machine a few lag, and the killed kernel's are lost; once 9 paid twice with 5 in
            # flight): those completed in this sweep less the answers Redis holds, read together
            stored = sum(1 for _ in redis.Redis.from_url(redis_url).scan_iter("olakit:answer:*"))
            killed["unstored"] = max(0, sum(srv.completed.values()) - sum(reference.values()) - stored)
            killed["pid"] = victim.pid

        threading.Thread(target=kill_a_worker, daemon=True).start()
        index = run_sweep(tmp_path / "dask.yaml", runs_dir=tmp_path / "runs", results_dir=tmp_path / "results")
    assert "pid" in killed, "no worker was killed"
    assert [r.status for r in index.runs] == ["ok", "ok"], [r.error for r in index.runs]
    assert set(srv.per_prompt) == set(reference)  # every prompt of the sweep was answered
    twice = sum(n - 1 for n in srv.per_prompt.values())
    reruns = {r.name: r.worker for r in index.runs}
    print(f"killed worker pid {killed['pid']}; {killed['in_flight']} calls in flight, {killed['unstored']} answered "
          f"but not stored, {twice} paid twice; {reruns}")  # fmt: skip
    # only the calls the killed kernel had in flight (sent and not yet stored) are paid again: each answer is stored
    # before its lane's next call, so at most one per lane of its client (8, the default concurrency of an endpoint)
    assert twice <= 8
    assert sorted(r.attempts for r in index.runs) == [1, 2]  # the killed run's restart is counted
    results = tmp_path / "results"
    assert tables(results, "dask") == tables(results, "local")


def test_cluster_input_errors_come_before_anything_runs(tmp_path, monkeypatch, redis_url):
    spec = tmp_path / "s.yaml"
    spec.write_text(SWEEP.format(run_id="x", executor="local"))
    dirs = {"runs_dir": tmp_path / "r", "results_dir": tmp_path / "o"}
    with pytest.raises(DataError, match="is for the dask executor"):
        run_sweep(spec, scheduler="tcp://127.0.0.1:1", **dirs)
    with pytest.raises(DataError, match="need an endpoint they all reach"):
        run_sweep(spec, executor="dask", scheduler="tcp://127.0.0.1:1", **dirs)
    monkeypatch.setenv("OLAKIT_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OLAKIT_MODEL", "fake")
    with pytest.raises(DataError, match="need a cache they all share: set OLAKIT_CACHE_URL"):
        run_sweep(spec, executor="dask", scheduler="tcp://127.0.0.1:1", **dirs)
    monkeypatch.setenv("OLAKIT_CACHE_URL", redis_url)
    port = free_port()
    # nothing listens there: the refusal is said at once (Dask's Client retries it for its 5 s, then says it timed out)
    refused = rf"the Dask scheduler at tcp://127\.0\.0\.1:{port} is unreachable \(.*Connection refused\)"
    with pytest.raises(DataError, match=refused):
        run_sweep(spec, executor="dask", scheduler=f"tcp://127.0.0.1:{port}", **dirs)
    # a bare HOST:PORT is a tcp address, as Dask reads it; Dask's own setting is read when none is given
    with pytest.raises(DataError, match=rf"the Dask scheduler at tcp://127\.0\.0\.1:{port} is unreachable"):
        run_sweep(spec, executor="dask", scheduler=f"127.0.0.1:{port}", **dirs)
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", f"127.0.0.1:{port}")
    import dask

    dask.config.refresh()
    try:
        with pytest.raises(DataError, match=rf"the Dask scheduler at tcp://127\.0\.0\.1:{port} is unreachable"):
            run_sweep(spec, executor="dask", **dirs)
    finally:
        monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
        dask.config.refresh()
    with pytest.raises(DataError, match=r"the scheduler file .*nowhere\.json is not there"):
        run_sweep(spec, executor="dask", scheduler_file=str(tmp_path / "nowhere.json"), **dirs)
    (tmp_path / "scheduler.json").write_text(json.dumps({"address": f"tcp://127.0.0.1:{port}"}))
    with pytest.raises(DataError, match=r"the scheduler file .*scheduler\.json is unreachable"):
        run_sweep(spec, executor="dask", scheduler_file=str(tmp_path / "scheduler.json"), **dirs)
    with pytest.raises(DataError, match="give its address as tcp://HOST:8786"):
        run_sweep(spec, executor="dask", scheduler="http://127.0.0.1:8786", **dirs)
    bad = tmp_path / "bad.yaml"
    bad.write_text(SWEEP.format(run_id="x", executor="slurm"))
    with pytest.raises(ConfigError, match="executor='slurm': input should be 'local' or 'dask'"):
        run_sweep(bad, **dirs)
    assert not (tmp_path / "r" / "x").exists() or not any((tmp_path / "r" / "x").iterdir())


def test_a_worker_without_the_notebooks_or_data_is_named_before_anything_runs(tmp_path, monkeypatch, redis_url):
    """Also the Dask user's own cluster: a Client made in Python (dask-jobqueue, dask-kubernetes) is taken as it is,
    and left open."""
    from dask.distributed import Client

    from olakit.notebook import cluster

    with Loopback() as srv:
        monkeypatch.setenv("OLAKIT_BASE_URL", srv.base_url)
        monkeypatch.setenv("OLAKIT_MODEL", "fake")
        monkeypatch.setenv("OLAKIT_CACHE_URL", redis_url)
        spec = tmp_path / "s.yaml"
        spec.write_text(SWEEP.format(run_id="x", executor="dask"))
        # the workers of this cluster have no data: their OLAKIT_DATA_DIR names an empty folder
        (tmp_path / "empty").mkdir()
        lc = cluster.local_cluster(
            n_workers=1, threads_per_worker=1, dashboard_address=":0", env={"OLAKIT_DATA_DIR": str(tmp_path / "empty")}
        )
        client = Client(lc)
        with pytest.raises(DataError, match=r"worker tcp://127\.0\.0\.1:\d+: no data for aqua, .* in .*empty"):
            run_sweep(spec, runs_dir=tmp_path / "r", results_dir=tmp_path / "o", client=client)
        assert client.status == "running"  # the caller's client: not closed
        client.close()
        lc.close()
        assert srv.requests == 0
    assert json.dumps(sorted(p.name for p in (tmp_path / "r" / "x").iterdir())) == "[]"
    # a worker with another olakit or another data manifest is named too
    other = {**cluster.fingerprint(), "olakit": "9.9.9", "data manifest": "0123456789abcdef"}
    problems = cluster._check_worker([], [], [], "token", {}, other)
    assert f"olakit {cluster.fingerprint()['olakit']} here, 9.9.9 on the sweep's machine" in problems
    assert any(p.startswith("data manifest ") and "0123456789abcdef on the sweep's machine" in p for p in problems)


# -- claims under faults (issue 23): each names what it prevents; the figures are paid prompts, counted at the server


@pytest.mark.parametrize("store", ["redis", "diskcache"])
def test_a_cancelled_batch_releases_its_claims(store, redis_url, tmp_path, monkeypatch):
    """asyncio.wait_for(llm.abatch(...), 0.5) timing out in a notebook once left its claim held (CancelledError is
    no Exception) and renewed: another process waited until the first exited. Now the claims are gone when the
    cancellation returns (the call in flight's, and the next call's, made ahead), and another process pays the call
    at once."""
    import asyncio

    from olakit.llm.cache import INFLIGHT, claim_key
    from olakit.llm.request import cache_key

    if store == "redis":
        monkeypatch.setenv("OLAKIT_CACHE_URL", redis_url)
    cache_dir = tmp_path / "disk"
    with Loopback(delay=3.0) as srv:
        llm = LLM(Endpoint(srv.base_url, "fake"), cache_dir=None if store == "redis" else cache_dir, progress=False,
                  concurrency=1)  # fmt: skip
        prompts = [Request.make(p) for p in ("slow", "next", "last")]

        async def cancelled():
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(llm.abatch(prompts), 0.5)

        asyncio.run(cancelled())
        keys = [cache_key(llm.endpoint.identity, r) for r in prompts]
        if store == "redis":
            import redis

            assert [redis.Redis.from_url(redis_url).get(claim_key(k)) for k in keys] == [None] * 3
        else:
            assert [llm.answers.store.get(INFLIGHT + k) for k in keys] == [None] * 3
        assert srv.requests == 1  # only the first was called
        # another process makes the call without waiting for a claim: the server sees its request
        script = textwrap.dedent("""
            import sys
            from olakit.llm import LLM, Endpoint, Request
            with LLM(Endpoint(sys.argv[1], "fake"), cache_dir=sys.argv[2] or None, progress=False) as llm:
                print(llm.batch([Request.make("slow")])[0].cached)
        """)
        other = subprocess.run(
            [sys.executable, "-c", script, srv.base_url, "" if store == "redis" else str(cache_dir)],
            capture_output=True, text=True, timeout=60, env=os.environ,
        )  # fmt: skip
        llm.close()
    assert other.stdout.strip() == "False", other.stderr[-2000:]  # paid by the other process, not waited for


def test_the_next_call_of_a_lane_is_claimed_while_the_current_one_runs(redis_url, monkeypatch):
    """As a call starts, the calls next in line are claimed (the lane's next, and the first of the lanes at the
    front of the queue, one per slot), so the cache's round trip is off the lane's path, without taking a lane from
    an idle slot: with 2 slots and 6 one-call lanes, 2 calls run at once and 4 claims are held (2 made ahead), none
    after the batch, and each prompt is called once."""
    import redis

    monkeypatch.setenv("OLAKIT_CACHE_URL", redis_url)
    store = redis.Redis.from_url(redis_url)
    held = []
    with Loopback(delay=0.5) as srv:
        llm = LLM(Endpoint(srv.base_url, "fake"), concurrency=2, progress=False, prefix_lanes=False)
        batch = threading.Thread(target=llm.batch, args=([Request.make(f"lane {i}") for i in range(6)],))
        batch.start()
        deadline = time.time() + 30
        while srv.active < 2 and time.time() < deadline:  # the first two calls are under way
            time.sleep(0.01)
        time.sleep(0.1)
        held.append(len(list(store.scan_iter("olakit:inflight:*"))))
        batch.join(timeout=60)
        llm.close()
    assert held == [4] and srv.max_active == 2
    assert not list(store.scan_iter("olakit:inflight:*"))
    assert dict(srv.per_prompt) == {f"lane {i}": 1 for i in range(6)}


def test_scripts_redis_lost_are_loaded_again(redis_url, monkeypatch):
    """Claims and stores run as Lua scripts by their SHA1 (EVALSHA); a Redis that restarted or flushed its scripts
    answers NOSCRIPT: they are loaded again and the calls go on, each paid once, answers stored."""
    import redis

    monkeypatch.setenv("OLAKIT_CACHE_URL", redis_url)
    store = redis.Redis.from_url(redis_url)
    with Loopback() as srv, LLM(Endpoint(srv.base_url, "fake"), concurrency=4, progress=False) as llm:
        first = llm.batch([Request.make(f"before {i}") for i in range(8)])
        store.script_flush()
        after = llm.batch([Request.make(f"after {i}") for i in range(8)])
    assert all(r.ok and not r.cached for r in first + after) and srv.requests == 16
    assert len(list(store.scan_iter("olakit:answer:*"))) == 16 and not list(store.scan_iter("olakit:inflight:*"))


def test_a_process_in_another_pid_namespace_does_not_take_over_a_live_claim(redis_url, tmp_path):
    """Containers with host networking share the hostname: a process in another pid namespace judged the owner
    "hostname:pid" dead (no such pid there), took its claim over and paid again. Reproduced with `unshare --pid`:
    2 payments before, 1 now."""
    script = textwrap.dedent("""
        import sys
        from olakit.llm import LLM, Endpoint, Request
        with LLM(Endpoint(sys.argv[1], "fake"), progress=False) as llm:
            r = llm.batch([Request.make("shared across namespaces")])[0]
        print(r.ok, r.cached)
    """)
    env = {**os.environ, "OLAKIT_CACHE_URL": redis_url}
    with Loopback(delay=2.0) as srv:
        owner = subprocess.Popen([sys.executable, "-c", script, srv.base_url], stdout=subprocess.PIPE, text=True,
                                 env=env)  # fmt: skip
        srv.wait_completed(0, timeout=1)
        deadline = time.time() + 30
        while srv.active == 0 and time.time() < deadline:  # the owner's call is under way
            time.sleep(0.02)
        other = subprocess.run(
            ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", script, srv.base_url],
            capture_output=True, text=True, timeout=60, env=env,
        )  # fmt: skip
        first = owner.communicate(timeout=60)[0]
    assert other.returncode == 0, other.stderr[-2000:]
    assert first.split() == ["True", "False"] and other.stdout.split() == ["True", "True"]
    assert srv.per_prompt == {"shared across namespaces": 1}


def test_an_owner_that_lost_its_claim_neither_renews_it_nor_stores_over_the_new_owner(redis_url, monkeypatch):
    """A process paused past its lease (A) once renewed the claim another had taken (PEXPIRE without a check) and
    stored its answer over the new owner's (last writer won). Two owners in one test process, each with its own
    token; A's pause is its renewals stopping."""
    import asyncio

    import redis

    from olakit.llm.cache import claim_key

    monkeypatch.setattr(answer_cache, "CLAIM_LEASE", 0.3)
    a, b = RedisCache(redis_url), RedisCache(redis_url)
    b.owner = b.owner + "-b"
    assert asyncio.run(a.try_claim("k", 60)) == (True, None)
    a._closing.set()  # paused: no renewal
    time.sleep(0.5)  # past the lease
    assert asyncio.run(b.try_claim("k", 60)) == (True, None)  # B takes over the lapsed claim
    a._closing.clear()
    a.renew_held(300)  # A wakes up: its renewal finds the claim is B's
    assert a.lost == {"k"} and redis.Redis.from_url(redis_url).get(claim_key("k")).decode() == b.owner
    asyncio.run(a.astore_answer("k", {"text": "A's answer"}))  # B still calls: A stores nothing
    assert a.get("k") is None
    asyncio.run(b.astore_answer("k", {"text": "B's answer"}))
    assert b.get("k") == {"text": "B's answer"} and not b.lost
    # the same pause where B has already stored: A's late answer does not overwrite B's
    assert asyncio.run(a.try_claim("k2", 60)) == (True, None)
    time.sleep(0.5)
    assert asyncio.run(b.try_claim("k2", 60)) == (True, None)
    asyncio.run(b.astore_answer("k2", {"text": "B's answer"}))
    asyncio.run(a.astore_answer("k2", {"text": "A's answer"}))
    assert a.get("k2") == {"text": "B's answer"} and a.lost == {"k", "k2"}
    # a lapsed claim nobody took: A's answer is kept (it was paid for), counted as lost all the same
    assert asyncio.run(a.try_claim("k3", 60)) == (True, None)
    time.sleep(0.5)
    asyncio.run(a.astore_answer("k3", {"text": "A's answer"}))
    assert a.get("k3") == {"text": "A's answer"} and "k3" in a.lost
    a.close()
    b.close()


def test_a_waiting_call_does_not_hold_its_slot(redis_url):
    """The first process calls 5 prompts (its first alone); the second, with one slot, has those 5 and 5 of its own. The
    server holds the first's answers until one of the second's own prompts arrives. A second process that waits in
    its slot on a prompt the first holds never sends its own: the answers are held until they time out. Now it goes
    on with its own prompts meanwhile; each prompt is paid once."""
    own_arrived, timed_out = threading.Event(), []

    def reply(prompt, req):
        if prompt.startswith("own"):
            own_arrived.set()
        elif not own_arrived.wait(60):  # room for the second process to start on a loaded machine (xdist)
            timed_out.append(prompt)
        return f"echo: {prompt}"

    script = textwrap.dedent("""
        import sys
        from olakit.llm import LLM, Endpoint, Request
        prompts = sys.argv[3].split(",")
        endpoint = Endpoint(sys.argv[1], "fake")
        with LLM(endpoint, concurrency=int(sys.argv[2]), progress=False, prefix_lanes=False) as llm:  # in order
            res = llm.batch([Request.make(p) for p in prompts])
        print(sum(r.ok for r in res))
    """)
    env = {**os.environ, "OLAKIT_CACHE_URL": redis_url}
    shared = [f"shared {i}" for i in range(5)]
    own = [f"own {i}" for i in range(5)]
    with Loopback(reply=reply) as srv:
        first = subprocess.Popen([sys.executable, "-c", script, srv.base_url, "5", ",".join(shared)],
                                 stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
        deadline = time.time() + 30
        while srv.active < 1 and time.time() < deadline:  # the first process holds its first call (it goes alone)
            time.sleep(0.02)
        second = subprocess.run([sys.executable, "-c", script, srv.base_url, "1", ",".join(shared + own)],
                                capture_output=True, text=True, timeout=180, env=env)  # fmt: skip
        assert first.communicate(timeout=90)[0].split() == ["5"] and second.stdout.split() == ["10"]
    assert timed_out == []
    assert dict(srv.per_prompt) == dict.fromkeys(shared + own, 1)  # each prompt paid once


def test_claim_and_answer_of_a_key_fall_in_one_cluster_slot():
    """The claim and store scripts touch a claim and its answer together; in Redis Cluster both must hash to one
    slot (CROSSSLOT otherwise): the claim's hash tag is the answer's key."""
    from redis.crc import key_slot

    from olakit.llm.cache import REDIS_ANSWER, claim_key

    for key in ("0" * 64, "ab" * 32, "f00d"):
        assert key_slot(claim_key(key).encode()) == key_slot((REDIS_ANSWER + key).encode())


@pytest.mark.parametrize(("persistence", "paid_again"), [("none", 20), ("aof", 0)])
def test_a_redis_restart_loses_the_answers_unless_it_keeps_an_append_only_file(tmp_path, persistence, paid_again):
    """Redis killed and restarted mid-sweep: without persistence it comes back empty and every answer is paid
    again (11 of 40 prompts paid twice in the outside check); with the append-only file the recipe sets up
    (appendonly yes, appendfsync everysec or always), none is."""

    options = ("--appendonly", "yes", "--appendfsync", "always") if persistence == "aof" else ()
    port = free_port()
    proc, url = start_redis(tmp_path, port, *options)
    env = {**os.environ, "OLAKIT_CACHE_URL": url}
    script = textwrap.dedent("""
        import sys
        from olakit.llm import LLM, Endpoint, Request
        with LLM(Endpoint(sys.argv[1], "fake"), progress=False) as llm:
            print(sum(not r.cached for r in llm.batch([Request.make(f"p{i}") for i in range(20)])))
    """)
    with Loopback() as srv:
        first = subprocess.run([sys.executable, "-c", script, srv.base_url], capture_output=True, text=True, env=env)
        assert first.stdout.split() == ["20"], first.stderr[-2000:]
        proc.send_signal(signal.SIGKILL)  # a crash, not a clean shutdown
        proc.wait(timeout=10)
        proc, _ = start_redis(tmp_path, port, *options)
        again = subprocess.run([sys.executable, "-c", script, srv.base_url], capture_output=True, text=True, env=env)
    proc.terminate()
    proc.wait(timeout=10)
    assert again.stdout.split() == [str(paid_again)] and srv.requests == 20 + paid_again


def test_a_password_protected_redis_works_and_a_wrong_password_is_one_clear_error(tmp_path, monkeypatch):
    """The recipe's Redis has a password (requirepass; an ACL user works the same way in the URL): the kit
    connects with it, and a wrong one is refused in one line that does not show it."""
    proc, url = start_redis(tmp_path, None, password="s3cret-pw")
    try:
        monkeypatch.setenv("OLAKIT_CACHE_URL", url)
        with Loopback() as srv, LLM(Endpoint(srv.base_url, "fake", identity="lb|fake"), progress=False) as llm:
            assert all(r.ok for r in llm.batch([Request.make("a"), Request.make("b")]))
            assert llm.batch([Request.make("a")])[0].cached
        # an ACL user limited to olakit's keys, as the recipe in docs/sweeps.md creates one
        import redis

        admin = redis.Redis.from_url(url)
        admin.execute_command("ACL", "SETUSER", "olakit", "on", ">user-pw", "~olakit:*", "+@read", "+@write",
                              "+@scripting", "+ping")  # fmt: skip
        admin.close()
        monkeypatch.setenv("OLAKIT_CACHE_URL", url.replace(":s3cret-pw@", "olakit:user-pw@"))
        with Loopback() as srv, LLM(Endpoint(srv.base_url, "fake", identity="lb|fake"), progress=False) as llm:
            assert all(r.ok and not r.cached for r in llm.batch([Request.make("c"), Request.make("d")]))
            assert llm.batch([Request.make("a")])[0].cached  # the answers stored with the password, read as the user
        monkeypatch.setenv("OLAKIT_CACHE_URL", url.replace("s3cret-pw", "wrong-pw"))
        with pytest.raises(
            CacheError, match=r"redis://:\*\*\*@127\.0\.0\.1:\d+/0 \(OLAKIT_CACHE_URL\) is unreachable"
        ) as e:
            LLM(Endpoint("http://127.0.0.1:9/v1", "fake"))
        assert "wrong-pw" not in str(e.value) and "s3cret" not in str(e.value)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_sweep_with_its_redis_down_says_so_in_one_line_before_anything_starts(tmp_path, monkeypatch, capsys):
    """Redis gone: the sweep once started the cluster and its kernels, then exited after ~22 s saying "the answers
    already received are cached". Now one line names the unreachable cache first; no run starts."""
    from olakit.cli import main

    url = f"redis://127.0.0.1:{free_port()}/0"
    monkeypatch.setenv("OLAKIT_CACHE_URL", url)
    monkeypatch.setenv("OLAKIT_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OLAKIT_MODEL", "fake")
    spec = tmp_path / "s.yaml"
    spec.write_text(SWEEP.format(run_id="down", executor="dask"))
    code = main(["sweep", str(spec), "--runs-dir", str(tmp_path / "r"), "--results-dir", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"olakit: error: the answer cache at {url} (OLAKIT_CACHE_URL) is unreachable: "
                                 + err[0].split("is unreachable: ", 1)[1]]  # fmt: skip
    assert "Rerun" not in err[0] and not (tmp_path / "r").exists() and not (tmp_path / "o").exists()


def test_calls_not_made_because_the_cache_failed_do_not_promise_a_cached_rerun():
    from olakit.llm.answerer import calls_failed

    gone = calls_failed(6, 6, "answers", "answer cache unavailable at redis://h:6379/0: ConnectionError: refused")
    assert "Rerun once the cache is back" in str(gone) and "already received are cached" not in str(gone)
    failed = calls_failed(2, 6, "answers", "APITimeoutError: timed out")
    assert "the answers already received are cached" in str(failed)


ENV_PROBE = """
import json, os
from pathlib import Path

Path(out_dir).mkdir(parents=True, exist_ok=True)
names = ("OLAKIT_ANSWERER_MODEL", "OMP_NUM_THREADS")
Path(out_dir, "env.json").write_text(json.dumps({k: os.environ.get(k) for k in names}))
"""


def test_a_sweep_leaves_the_workers_environment_as_it_was(tmp_path, monkeypatch, redis_url):
    """Workers once kept each sweep's settings (os.environ.update, never undone): a later sweep that left
    OLAKIT_ANSWERER_MODEL unset inherited the earlier one's. The settings now go to each notebook's kernel only.
    One LocalCluster, started quiet and without a dashboard on :8787, runs both sweeps."""
    import nbformat

    from olakit.notebook import cluster

    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('source = "recorded"\nout_dir = "x"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(ENV_PROBE)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "probe.ipynb")
    spec = tmp_path / "s.yaml"
    client, lc = cluster.connect(None, 1)
    try:
        assert lc.scheduler_info["services"].get("dashboard") != 8787
        monkeypatch.setenv("OLAKIT_BASE_URL", "http://127.0.0.1:9/v1")
        monkeypatch.setenv("OLAKIT_MODEL", "fake")
        monkeypatch.setenv("OLAKIT_CACHE_URL", redis_url)
        seen, threads_before = [], client.run(lambda: os.environ.get("OMP_NUM_THREADS"))
        for run_id, answerer in (("first", "model-of-the-first-sweep"), ("second", None)):
            if answerer:
                monkeypatch.setenv("OLAKIT_ANSWERER_BASE_URL", "http://127.0.0.1:9/v1")
                monkeypatch.setenv("OLAKIT_ANSWERER_MODEL", answerer)
            else:
                monkeypatch.delenv("OLAKIT_ANSWERER_BASE_URL")
                monkeypatch.delenv("OLAKIT_ANSWERER_MODEL")
            spec.write_text(f"run_id: {run_id}\nexecutor: dask\nnotebooks:\n  - notebook: {tmp_path / 'probe.ipynb'}\n")
            index = run_sweep(spec, runs_dir=tmp_path / "runs", results_dir=tmp_path / "results", client=client)
            assert [r.status for r in index.runs] == ["ok"], index.runs[0].error
            seen.append(json.loads((tmp_path / "results" / run_id / "probe" / "env.json").read_text()))
        assert seen[0]["OLAKIT_ANSWERER_MODEL"] == "model-of-the-first-sweep" and seen[0]["OMP_NUM_THREADS"]
        assert seen[1]["OLAKIT_ANSWERER_MODEL"] is None
        assert set(client.run(lambda: os.environ.get("OLAKIT_ANSWERER_MODEL")).values()) == {None}
        assert client.run(lambda: os.environ.get("OMP_NUM_THREADS")) == threads_before  # the kernels' limit only
    finally:
        client.close()
        lc.close()


def test_a_sweep_on_a_scheduler_given_by_address_writes_its_index(tmp_path, monkeypatch, redis_url):
    """`olakit sweep --executor dask --scheduler tcp://HOST:PORT` ran every notebook, then died building the index
    (`'NoneType' object has no attribute 'address'`: the client it had made was closed): no index.json, exit 1."""
    import nbformat

    from olakit.notebook import cluster

    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('source = "recorded"\nout_dir = "x"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell("1 + 1")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "probe.ipynb")
    spec = tmp_path / "s.yaml"
    spec.write_text(f"run_id: by-address\nexecutor: dask\nnotebooks:\n  - notebook: {tmp_path / 'probe.ipynb'}\n")
    monkeypatch.setenv("OLAKIT_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OLAKIT_MODEL", "fake")
    monkeypatch.setenv("OLAKIT_CACHE_URL", redis_url)
    from dask.distributed import Client

    with cluster.local_cluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as lc:
        with Client(lc.scheduler_address) as look:
            threads_before = look.run(lambda: os.environ.get("OMP_NUM_THREADS"))
        index = run_sweep(spec, runs_dir=tmp_path / "runs", results_dir=tmp_path / "results",
                          scheduler=lc.scheduler_address)  # fmt: skip
        assert [r.status for r in index.runs] == ["ok"], index.runs[0].error
        assert index.scheduler == lc.scheduler_address
        with Client(lc.scheduler_address) as look:  # the workers of a scheduler the sweep did not start
            assert look.run(lambda: os.environ.get("OMP_NUM_THREADS")) == threads_before
    assert json.loads((tmp_path / "runs" / "by-address" / "index.json").read_text())["scheduler"].startswith("tcp://")


def test_a_local_cluster_starts_without_log_lines():
    code = textwrap.dedent("""
        import logging
        logging.basicConfig(level=logging.WARNING)
        from olakit.notebook import cluster
        client, lc = cluster.connect(None, 1)
        print(client.submit(sum, [1, 2]).result())
        client.close(); lc.close()
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["3"]
    assert [ln for ln in out.stderr.splitlines() if "INFO" in ln or "dashboard" in ln] == [], out.stderr[-2000:]


def test_a_local_cluster_gives_its_workers_one_thread_and_leaves_this_process_as_it_was():
    """Dask's nannies, with its default config, write OMP_NUM_THREADS=1 and the other pre-spawn settings into the
    process that starts them; olakit's LocalCluster gives them to each worker through the nanny's own env setting:
    the workers compute on one thread, this process (and what it starts later) keeps its own."""
    from olakit.notebook import cluster

    before = {name: os.environ.get(name) for name in THREADS}
    client, lc = cluster.connect(None, 1)
    try:
        seen = next(iter(client.run(lambda: {n: os.environ.get(n) for n in THREADS}).values()))
        assert seen["OMP_NUM_THREADS"] == "1" and seen["OPENBLAS_NUM_THREADS"] == "1"
        assert {name: os.environ.get(name) for name in THREADS} == before
    finally:
        client.close()
        lc.close()
    assert {name: os.environ.get(name) for name in THREADS} == before
