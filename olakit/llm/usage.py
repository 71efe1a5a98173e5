"""What a batch of calls used: requests, paid calls, cache hits, failures, tokens, cost and latency."""

from __future__ import annotations

from collections.abc import Sequence

from olakit.llm.request import Result


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
