"""Throughput of the kit against a 127.0.0.1 OpenAI-compatible server answering after a fixed 200 ms.

With 32 concurrent calls the ceiling is 32 / 0.2 s = 160 requests/s. Goal: ratio >= 0.9.
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
# the server runs in its own process, as a real endpoint would, so it does not share the client's GIL
server = subprocess.Popen(
    [sys.executable, "-m", "olakit.llm.loopback", "--delay", str(delay)], stdout=subprocess.PIPE, text=True
)
try:
    base_url = server.stdout.readline().strip()
    with tempfile.TemporaryDirectory() as cache:
        llm = LLM(Endpoint(base_url, "bench"), cache_dir=cache, concurrency=concurrency, progress=False)
        llm.batch([Request.make(f"warm-up {i}", max_tokens=4) for i in range(concurrency)])
        t0 = time.perf_counter()
        results = llm.batch([Request.make(f"request {i}", max_tokens=4) for i in range(n)])
        wall = time.perf_counter() - t0
        llm.close()
finally:
    server.kill()
assert all(r.ok for r in results)
rate = n / wall
ceiling = concurrency / delay
check(
    "throughput",
    rate / ceiling,
    0.9,
    higher_is_better=True,
    unit="x ceiling",
    requests=n,
    concurrency=concurrency,
    server_delay_s=delay,
    wall_s=round(wall, 3),
    requests_per_s=round(rate, 1),
)
