"""Scale, simulated on this machine: a Dask LocalCluster of 4 worker processes, each an LLM client at concurrency 32
against its own loopback server (another process) answering after 200 ms, all sharing one real redis-server as the
answer cache (claims and answers). The ceiling is 4 x 32 / 0.2 s = 640 requests/s; the figure is the requests all
workers completed between the first start and the last end, over that time. Goal: >= 0.9 x the ceiling.

Then the Redis cache's replay rate: a batch of 10,000 calls that are all cache hits, looked up in one pipelined
round trip (MGET). Goal: >= 20,000 hits/s.
Usage: python benchmarks/bench_cluster.py [REQUESTS_PER_WORKER]   (redis-server must be installed: `make redis`)
"""

import shutil
import socket
import subprocess
import sys
import tempfile
import time

from goal import check

WORKERS, CONCURRENCY, DELAY = 4, 32, 0.2
per_worker = int(sys.argv[1]) if len(sys.argv) > 1 else 1600


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_run(cache_url: str, start_at: float, n: int, tag: str) -> dict:
    """On a Dask worker: its own loopback server process, a warm-up batch, then n calls from start_at on."""
    import os

    os.environ["OLAKIT_CACHE_URL"] = cache_url
    from olakit.llm import LLM, Endpoint, Request

    server = subprocess.Popen(
        [sys.executable, "-m", "olakit.llm.loopback", "--delay", str(DELAY)], stdout=subprocess.PIPE, text=True
    )
    try:
        base_url = server.stdout.readline().strip()
        with LLM(Endpoint(base_url, "bench"), concurrency=CONCURRENCY, progress=False) as llm:
            llm.batch([Request.make(f"{tag} warm-up {i}", max_tokens=4) for i in range(CONCURRENCY)])
            time.sleep(max(0.0, start_at - time.time()))
            t0 = time.time()
            results = llm.batch([Request.make(f"{tag} request {i}", max_tokens=4) for i in range(n)])
            t1 = time.time()
    finally:
        server.kill()
    return {"start": t0, "end": t1, "ok": sum(r.ok for r in results), "paid": sum(not r.cached for r in results)}


def main() -> None:
    from dask.distributed import Client, LocalCluster

    from olakit.llm import LLM, Endpoint, Request
    from olakit.llm.loopback import Loopback

    exe = shutil.which("redis-server")
    if not exe:
        sys.exit("redis-server is not installed: run `make redis`")
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        redis = subprocess.Popen(
            [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", folder],
            stdout=subprocess.DEVNULL,
        )
        url = f"redis://127.0.0.1:{port}/0"
        time.sleep(0.5)
        try:
            with LocalCluster(n_workers=WORKERS, threads_per_worker=1, dashboard_address=None) as lc, Client(lc) as dc:
                start_at = time.time() + 8  # each worker starts its server and warms up first
                futures = [
                    dc.submit(worker_run, url, start_at, per_worker, f"w{i}", pure=False) for i in range(WORKERS)
                ]
                runs = dc.gather(futures)
            # the replay: every answer of one batch again, from Redis
            import os

            os.environ["OLAKIT_CACHE_URL"] = url
            n = 10_000
            requests = [Request.make(f"question {i}: what is {i} + {i}?", max_tokens=32) for i in range(n)]
            with Loopback() as srv, LLM(Endpoint(srv.base_url, "bench"), concurrency=64, progress=False) as llm:
                llm.batch(requests)
                t0 = time.perf_counter()
                replay = llm.batch(requests)
                replay_s = time.perf_counter() - t0
                assert all(r.cached for r in replay) and srv.requests == n
        finally:
            redis.terminate()
    assert all(r["ok"] == per_worker and r["paid"] == per_worker for r in runs), runs
    wall = max(r["end"] for r in runs) - min(r["start"] for r in runs)
    rate = WORKERS * per_worker / wall
    ceiling = WORKERS * CONCURRENCY / DELAY
    met = check(
        "cluster_throughput",
        rate / ceiling,
        0.9,
        higher_is_better=True,
        unit="x ceiling",
        workers=WORKERS,
        concurrency_per_worker=CONCURRENCY,
        server_delay_s=DELAY,
        requests=WORKERS * per_worker,
        wall_s=round(wall, 3),
        requests_per_s=round(rate, 1),
        cache="redis (real redis-server on 127.0.0.1)",
        exit=False,
    )
    met &= check(
        "redis_replay",
        n / replay_s,
        20_000,
        higher_is_better=True,
        unit="hits/s",
        calls=n,
        replay_s=round(replay_s, 3),
        exit=False,
    )
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
