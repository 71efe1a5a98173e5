"""Overhead of the kit on the embedded model: wall time of 20 short calls vs the server's own reported time.

The server's prompt + generation seconds come from its Prometheus /metrics counters, read before and after.
Calls run one at a time so the two are comparable. Goal: kit wall time <= 1.1x server time.
Usage: python benchmarks/bench_local.py [N] [MAX_TOKENS]
"""

import sys
import tempfile
import time

from goal import check

from olakit.llm import LLM, Endpoint, Request
from olakit.llm.local import LocalServer, server_metrics

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
max_tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 32


def server_seconds(base_url: str) -> float:
    m = server_metrics(base_url)
    return m["prompt_seconds_total"] + m["tokens_predicted_seconds_total"]


with LocalServer(n_parallel=1, n_ctx=4096) as srv, tempfile.TemporaryDirectory() as cache:
    llm = LLM(Endpoint(srv.base_url, srv.model, local=True), cache_dir=cache, concurrency=1, progress=False)
    llm.complete("warm up", max_tokens=2)
    before = server_seconds(srv.base_url)
    t0 = time.perf_counter()
    res = llm.batch(
        [
            Request.make(f"Write one short sentence about the number {i}.", max_tokens=max_tokens, temperature=0)
            for i in range(n)
        ]
    )
    wall = time.perf_counter() - t0
    served = server_seconds(srv.base_url) - before
assert all(r.ok for r in res)
tokens = sum(r.completion_tokens for r in res)
check(
    "embedded_overhead",
    wall / served,
    1.1,
    higher_is_better=False,
    unit="x server time",
    calls=n,
    tokens=tokens,
    kit_wall_s=round(wall, 3),
    server_s=round(served, 3),
    tokens_per_s=round(tokens / wall, 1),
)
