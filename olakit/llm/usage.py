"""What a batch of calls used: requests, paid calls, cache hits, failures, tokens, cost and latency."""

from __future__ import annotations

from collections.abc import Sequence

from olakit.llm.request import Result, cache_key


def summarize(results: Sequence[Result]) -> dict:
    """Batch usage: requests, paid calls, cache hits, failures, tokens (all answers), cost and latency (paid calls).

    >>> summarize([Result("k", text="4", prompt_tokens=3, completion_tokens=1, cost=0.0)])["paid"]
    1
    """
    paid = [r for r in results if r.ok and not r.cached]
    costs = [r.cost for r in paid if r.cost is not None]
    return {
        "requests": len(results),
        "paid": len(paid),
        "cached": sum(r.cached for r in results),
        "failed": sum(not r.ok for r in results),
        "prompt_tokens": sum(r.prompt_tokens or 0 for r in results if r.ok),
        "completion_tokens": sum(r.completion_tokens or 0 for r in results if r.ok),
        "cost": sum(costs) if costs else None,
        "latency_s": sum(r.latency or 0 for r in paid),
    }


class CallCounter:
    """Batches through an LLM, each distinct request sent once, and counts what a run made: requests, unique
    prompts, paid calls, cache hits, failures, tokens and cost (``counts``). ``counter(requests, desc)`` returns the
    results aligned with the requests; ``counter.by_key(requests, desc)`` returns them by cache key."""

    FIELDS = ("requests", "unique_prompts", "paid", "cached", "failed", "prompt_tokens", "completion_tokens")

    def __init__(self, llm):
        self.llm = llm
        self.counts: dict = {**dict.fromkeys(self.FIELDS, 0), "cost": 0.0}

    def by_key(self, requests, desc: str = "LLM calls") -> dict:
        unique: dict = {}
        for r in requests:
            unique.setdefault(cache_key(self.llm.endpoint.identity, r), r)
        results = self.llm.batch(list(unique.values()), desc=desc)
        c = self.counts
        for r in results:
            c["unique_prompts"] += 1
            c["paid"] += int(r.ok and not r.cached)
            c["cached"] += int(r.cached)
            c["failed"] += int(not r.ok)
            c["prompt_tokens"] += r.prompt_tokens or 0
            c["completion_tokens"] += r.completion_tokens or 0
            c["cost"] += r.cost or 0.0
        c["requests"] += len(requests)
        return dict(zip(unique, results))

    def __call__(self, requests, desc: str = "LLM calls") -> list[Result]:
        got = self.by_key(requests, desc)
        return [got[cache_key(self.llm.endpoint.identity, r)] for r in requests]
