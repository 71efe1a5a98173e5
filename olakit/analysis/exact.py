"""The exact McNemar test's power, computed exactly: how many questions it needs to tell two cells apart
(``n_needed``), what a run's questions can decide before any call (``sensitivity``), the rules of its rejection
region. The plan and its price are olakit.plan; the verdicts of a registered family olakit.analysis.verdicts.

The model: each question falls, independently, a-only right (probability ``p10``), b-only right (``p01``) or
concordant. Over ``n`` questions the discordant count ``D`` is Bin(n, p10 + p01) and, given ``D = d``, the a-only
count is Bin(d, p10 / (p10 + p01)). The test the kit reports (inference.mcnemar_exact) rejects at level ``each``
(one test's) when 2 P(X <= min(k, d - k)) < each for X ~ Bin(d, 1/2): for each ``d`` the rejection region is k <= c_d or
k >= d - c_d. So the power at ``n`` is

    sum over d of Bin(d; n, p10 + p01) * [Bin(k <= c_d; d, q) + Bin(k >= d - c_d; d, q)],  q = p10 / (p10 + p01),

exact, with no normal approximation. The power of an exact test is not monotone in ``n`` (it saws up and down as
c_d steps); ``n_needed`` is the smallest ``n`` from which it stays at the goal.

A family of ``m`` comparisons corrected by Holm is planned at ``alpha / m`` each: Holm's first, strictest step,
so a comparison planned this way is decided whatever the others' p-values.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from olakit.names import plural
from olakit.settings import ANALYSIS, Analysis

BEYOND = 100_000
"""The most questions the planner looks at for a comparison the split cannot decide (a bisection: "about")."""
SETTLE = 60
"""How many n past the first that reaches the goal are checked to stay there."""


def _binomial():
    """scipy.special's binomial distribution functions, imported here (scipy is a dependency of olakit): bdtr(k, n,
    p) = P(X <= k) and bdtrc(k, n, p) = P(X > k) for X ~ Bin(n, p), the incomplete beta function in double precision.
    They, not scipy.stats' ``binom``, because scipy.stats costs 0.5 s more to import (0.66 s against 0.17 s, after
    numpy and pandas) and every live run prints its sensitivity before its first call."""
    from scipy.special import bdtr, bdtrc

    return bdtr, bdtrc


def rejection_limits(d_max: int, each: float) -> np.ndarray:
    """c_d for d = 0..d_max: the largest k with 2 P(Bin(d, 1/2) <= k) < each, the kit's rejection rule
    (inference.mcnemar_exact) for one test at level ``each`` (below 1); -1 where none (that many discordant pairs can
    never reject). A bisection on every d at once, from k that rejects to k that does not: below d / 2 - t, where
    Hoeffding's bound P(X <= d / 2 - t) <= exp(-2 t^2 / d) is each / 2, less one (or k = -1: 2 P(X <= -1) = 0),
    and k = d // 2 + 1 (2 P(X <= d // 2) >= 1)."""
    bdtr, _ = _binomial()
    d = np.arange(d_max + 1)
    t = np.sqrt(d * math.log(2 / each) / 2)
    lo, hi = np.maximum(np.floor(d / 2 - t).astype(int) - 1, -1), d // 2 + 1
    while (hi - lo > 1).any():  # where it is 1 already, mid is lo and lo stays
        mid = (lo + hi) // 2
        rejects = (mid < 0) | (2 * bdtr(np.maximum(mid, 0), d, 0.5) < each)
        lo, hi = np.where(rejects, mid, lo), np.where(rejects, hi, mid)
    return lo


def power(n: int, p10: float, p01: float, each: float, limits: np.ndarray | None = None) -> float:
    """The exact power of the two-sided exact McNemar test at level ``each`` (one test's: a family's alpha / m) on
    ``n`` questions (module docstring). ``limits``: rejection_limits(>= n, each), when already computed."""
    discordance = p10 + p01
    if n <= 0 or discordance <= 0:
        return 0.0
    c = (rejection_limits(n, each) if limits is None else limits)[: n + 1]
    d = np.arange(n + 1)
    q = p10 / discordance
    bdtr, bdtrc = _binomial()
    k = np.maximum(c, 0)  # where c < 0 nothing rejects, and the tails are not asked for
    reject = np.where(c >= 0, bdtr(k, d, q) + bdtrc(d - k - 1, d, q), 0.0)  # P(a-only <= c) + P(a-only >= d - c)
    pmf = np.diff(bdtr(d, n, discordance), prepend=0.0)  # P(D = d), from the cdf: an absolute error of ~1e-16 each
    return float(np.clip((pmf * reject).sum(), 0, 1))


def n_needed(p10: float, p01: float, each: float, goal: float, ceiling: int, settle: bool = True) -> int | None:
    """The smallest n <= ceiling from which the power is at least ``goal`` (with ``settle``, checked at each of the
    next SETTLE n: the dips of an exact test's power are a few questions wide; without, the first n a bisection
    finds, for the rough sizes beyond a split); None when the power at the ceiling is below it."""
    if p10 == p01 or ceiling < 1:
        return None
    limits = rejection_limits(ceiling, each)
    if power(ceiling, p10, p01, each, limits) < goal:
        return None
    # the power climbs, sawing: find the first n reaching the goal, then step past any later dip below it
    lo, hi = 1, ceiling
    while lo < hi:  # first n with power >= goal, as if monotone
        mid = (lo + hi) // 2
        if power(mid, p10, p01, each, limits) >= goal:
            hi = mid
        else:
            lo = mid + 1
    n = lo
    for m in range(n, min(ceiling, n + SETTLE) + 1) if settle else ():  # the saw's teeth are a few questions wide
        if power(m, p10, p01, each, limits) < goal:
            n = m + 1
    return min(n, ceiling)


DISCORDANCES = (0.1, 0.3, 0.5)
"""The discordance rates (share of questions exactly one of two cells gets right) a run's printed plan states its
sensitivity at, with no estimate: two similar prompts of one model, two templates, two different methods."""


def min_discordant(each: float) -> int:
    """The fewest discordant questions with which the exact McNemar test can reject at level ``each``:
    the smallest d with 2 / 2**d < each (all d of them one way).

    >>> min_discordant(0.05), min_discordant(0.05 / 10)
    (6, 9)
    """
    return int(math.floor(math.log2(2 / each))) + 1


def detectable_difference(n: int, discordance: float, each: float, goal: float) -> float | None:
    """The smallest accuracy difference two cells with this discordance rate must have for the exact test at
    level ``each`` to find it with ``goal`` power on ``n`` questions: the smallest multiple of 0.001 that is found
    (the discordance itself where none below it is), so the power at the difference stated is never below the goal
    (rounding to the nearest 0.001 once stated 0.156 for 254 questions at discordance 0.3 and 276 pairs, whose power
    is 0.7975); None when not even the largest possible, the discordance itself (every discordant question one
    way), is found."""
    limits = rejection_limits(n, each)

    def found(diff: float) -> bool:
        return power(n, (discordance + diff) / 2, (discordance - diff) / 2, each, limits) >= goal

    if n < min_discordant(each) or not found(discordance):
        return None
    lo, hi = -1, math.ceil(round(discordance * 1000, 9))  # thousandths (-1: none); the power grows with the difference
    while hi - lo > 1:  # found at hi (or at the discordance, where hi / 1000 is past it), not at lo
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if found(mid / 1000) else (mid, hi)
    return min(hi / 1000, discordance)


def sensitivity(
    n: int, pairs: int, analysis: Analysis = ANALYSIS, goal: float = 0.8, what: str = "cells"
) -> pd.DataFrame:
    """What a run of ``n`` questions can decide among its ``pairs`` paired tests (Holm at the analysis settings'
    ``alpha``, each planned at alpha / pairs, its strictest step), before any call and with no estimate: one row per
    discordance rate of DISCORDANCES, with the smallest difference found with ``goal`` power (None: none can be).
    ``what``: the pairs' kind, for the printed line (``cells``, ``rows``, ``iterations``, ``conditions``)."""
    each = analysis.alpha / max(1, pairs)
    need = min_discordant(each)
    return pd.DataFrame(
        [
            {"n": n, "pairs": pairs, "alpha": analysis.alpha, "alpha_each": each, "min_discordant": need,
             "discordance": d, "detectable_difference": detectable_difference(n, d, each, goal), "power": goal,
             "of": what}
            for d in DISCORDANCES
        ]
    )  # fmt: skip


def sensitivity_line(table: pd.DataFrame) -> str:
    """The sensitivity as a run's printed plan says it (one line; ``olakit geek -n 2`` once gave CIs from 0 to 1
    with no word that 2 questions cannot separate two rows)."""
    r = table.iloc[0]
    n, pairs, need, what = int(r["n"]), int(r["pairs"]), int(r["min_discordant"]), r["of"]
    head = (
        f"power: {plural(pairs, 'pair')} of {what}, exact McNemar with Holm at {r['alpha']:g} (each "
        f"planned at {r['alpha_each']:.3g}, where a pair needs at least {need} questions exactly one of its two gets "
        "right)"
    )
    if n < need:
        return f"{head}; {plural(n, 'question')} cannot decide any pair, whatever the answers"
    found = [(d, x) for d, x in zip(table["discordance"], table["detectable_difference"]) if pd.notna(x)]
    if not found:
        return f"{head}; {plural(n, 'question')} find no difference with {r['power']:.0%} power, at any discordance"
    said = ", ".join(f"{x:.3f} at discordance {d:g}" for d, x in found)
    return f"{head}; {plural(n, 'question')} find, with {r['power']:.0%} power, an accuracy difference of {said}"
