"""Throughput of the kit against a 127.0.0.1 OpenAI-compatible server answering after a fixed 200 ms.

With 32 concurrent calls the ceiling is 32 / 0.2 s = 160 requests/s. Goal: ratio >= 0.9, with the default
transport (openai's aiohttp client). The same batch also runs over openai's default httpx client, side by side in
this run, and the client's CPU time per call is recorded for both (the figure that limits a busy machine).
A first batch of 32 calls opens the connections, as any earlier batch of a session would (an LLM keeps its
client and connections between batches); the timed batch is the next one.
Usage: python benchmarks/bench_throughput.py [N_REQUESTS]
"""

import subprocess
import sys
import tempfile
import time

from goal import check

from olakit.llm import LLM, Endpoint, Request

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1600
concurrency, delay = 32, 0.2


def timed(base_url: str, transport: str) -> tuple[float, float]:
    """Wall time and client CPU seconds per call of one batch of n calls (after a warm-up batch)."""
    with tempfile.TemporaryDirectory() as cache:
        llm = LLM(Endpoint(base_url, "bench"), cache_dir=cache, concurrency=concurrency, progress=False,
                  transport=transport)  # fmt: skip
        llm.batch([Request.make(f"{transport} warm-up {i}", max_tokens=4) for i in range(concurrency)])
        c0, t0 = time.process_time(), time.perf_counter()
        results = llm.batch([Request.make(f"{transport} request {i}", max_tokens=4) for i in range(n)])
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        llm.close()
    assert all(r.ok for r in results)
    return wall, cpu / n


# the server runs in its own process, as a real endpoint would, so it does not share the client's GIL
server = subprocess.Popen(
    [sys.executable, "-m", "olakit.llm.loopback", "--delay", str(delay)], stdout=subprocess.PIPE, text=True
)
try:
    base_url = server.stdout.readline().strip()
    httpx_wall, httpx_cpu = timed(base_url, "httpx")
    wall, cpu = timed(base_url, "auto")
finally:
    server.kill()
ceiling = concurrency / delay
check(
    "throughput",
    n / wall / ceiling,
    0.9,
    higher_is_better=True,
    unit="x ceiling",
    requests=n,
    concurrency=concurrency,
    server_delay_s=delay,
    wall_s=round(wall, 3),
    requests_per_s=round(n / wall, 1),
    client_cpu_ms_per_call=round(1000 * cpu, 3),
    httpx_ratio=round(n / httpx_wall / ceiling, 4),
    httpx_client_cpu_ms_per_call=round(1000 * httpx_cpu, 3),
    cpu_per_call_vs_httpx=round(cpu / httpx_cpu, 3),
)
