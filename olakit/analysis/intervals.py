"""Confidence intervals of a single proportion (an accuracy, a share of verdicts): Wilson's score interval, in
closed form, at the analysis settings' level; and the accuracy row every table is made of. The bootstrap serves
paired differences only (olakit.analysis.inference), where no closed form fits.

``wilson_ci(2, 2)`` is (0.3424, 1.0) at 95%, not the percentile bootstrap's degenerate (1.0, 1.0).
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

from olakit.config import STATS, Stats


def wilson_ci(k: int, n: int, stats: Stats = STATS) -> tuple[float, float]:
    """Wilson's score interval for k successes in n trials at ``stats.level``; (nan, nan) when n is 0. Its ends are
    exact: none right gives a lower bound of 0 and all right an upper bound of 1 (the closed form misses either by an
    ulp at some n, 0.9999999999999999 for 12 of 12 at 80%, where statsmodels gives 1.0).

    >>> [round(x, 4) for x in wilson_ci(0, 3)]
    [0.0, 0.5615]
    >>> [round(x, 4) for x in wilson_ci(2, 2)]
    [0.3424, 1.0]
    """
    if n == 0:
        return (float("nan"), float("nan"))
    z = NormalDist().inv_cdf(0.5 + stats.level / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (0.0 if k == 0 else float(centre - half), 1.0 if k == n else float(centre + half))


def accuracy_row(method: str, strategy: str, correct, stats: Stats = STATS) -> dict:
    """One table row: method, notes_strategy, n, correct, accuracy and its Wilson interval at ``stats.level``.

    >>> accuracy_row("ST", "zero-shot", [1, 0, 1, 1])["accuracy"]
    0.75
    """
    x = np.asarray(correct, dtype=bool)
    lo, hi = wilson_ci(int(x.sum()), len(x), stats)
    return {
        "method": method,
        "notes_strategy": strategy,
        "n": len(x),
        "correct": int(x.sum()),
        "accuracy": float(x.mean()) if len(x) else float("nan"),
        "ci_low": lo,
        "ci_high": hi,
    }


def verdict_shares(judgements, labels=("a", "b"), stats: Stats = STATS) -> dict:
    """A pairwise judge's verdicts (olakit.llm.judge): the share of each of a / tie / b / unclear (named by
    ``labels`` for a and b) with its Wilson interval, and the position bias: the share of clear single-order verdicts
    that chose the answer shown first.

    >>> from olakit.llm.judge import Judgement
    >>> s = verdict_shares([Judgement("a", "1", "2"), Judgement("tie", "1", "1")], labels=("loop", "direct"))
    >>> s["loop"], s["tie"], s["position_bias_first"]
    (0.5, 0.5, 0.75)
    """
    v = [j.verdict for j in judgements]
    out: dict = {"n": len(v)}
    for name, key in ((labels[0], "a"), ("tie", "tie"), (labels[1], "b"), ("unclear", "unclear")):
        k = sum(x == key for x in v)
        out[name] = k / len(v) if v else float("nan")
        out[f"{name}_ci"] = wilson_ci(k, len(v), stats)
    picks = [o for j in judgements for o in (j.first_order, j.second_order) if o in ("1", "2")]
    out["position_bias_first"] = float(np.mean([p == "1" for p in picks])) if picks else float("nan")
    return out
