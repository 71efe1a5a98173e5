"""Cache replay speed: 10,000 calls that are all cache hits. Goal: >= 5,000 hits/s.

The cache is filled through real calls to a 127.0.0.1 server first; only the replay is timed.
Usage: python benchmarks/bench_cache.py [N]
"""

import sys
import tempfile
import time

from goal import check

from olakit.llm import LLM, Endpoint, Request
from olakit.llm.loopback import Loopback

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
requests = [Request.make(f"question {i}: what is {i} + {i}?", max_tokens=32, temperature=0) for i in range(n)]
with Loopback() as srv, tempfile.TemporaryDirectory() as cache:
    llm = LLM(Endpoint(srv.base_url, "bench"), cache_dir=cache, concurrency=64, progress=False)
    t0 = time.perf_counter()
    llm.batch(requests)
    fill = time.perf_counter() - t0
    t0 = time.perf_counter()
    replay = llm.batch(requests)
    wall = time.perf_counter() - t0
    assert all(r.cached for r in replay) and srv.requests == n
check(
    "cache_replay",
    n / wall,
    5000,
    higher_is_better=True,
    unit="hits/s",
    calls=n,
    fill_s=round(fill, 2),
    replay_s=round(wall, 3),
)
