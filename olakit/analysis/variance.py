"""Where the variance of a prompting experiment lies: an ablation grid as the crossed design it is (generalizability
theory), what the next budget should buy (a decision study), clustered standard errors, and the noise of repeats.

A grid's outcomes are y[q, a, b, ..., r] in {0, 1}: question q, one level of each crossed facet (template, note
strategy, ...), repeat r (samples, replicates, epochs; one when there are none). Every facet is random, and crossed
with every other; the questions that lack a cell are left out (listwise) and counted, so the design is balanced.

- **Sums of squares.** For an effect E (a set of factors, questions among them), its effect estimate at each level
  of E is the inclusion-exclusion of marginal means, alpha_E = sum over S in E of (-1)^(|E|-|S|) mean_S, and
  SS_E = (N / n_E) * sum alpha_E^2, with N the observations and n_E the levels of E; df_E = prod (n_f - 1).
  With repeats, the residual is the spread within cells (SS_e = sum (y - cell mean)^2, df = cells (r - 1));
  without, the interaction of every factor is confounded with it ("residual").
- **Variance components** (the ANOVA estimators): E[MS_E] = sum over E' containing E of sigma2_E' * N / n_E' (the
  residual's coefficient 1), solved from the highest-order effect down. A negative estimate is reported as 0 (and
  said so in ``negative``); the solution uses the estimates as computed, so the others do not move with it.
- **Intervals**: the components again on questions drawn with replacement (``n_boot`` times, ``analysis_seed``),
  percentile intervals at ``level``.
- **Decision study** (olakit.analysis.variance.decision): from the components, the standard error of a cell's
  accuracy, of the difference between two cells that differ in one facet, and of the mean over n_t levels of a
  facet, as functions of the numbers of questions, repeats and facet levels; and the cheapest design (fewest
  calls) that reaches a target standard error.

docs/statistics.md writes every formula out with a worked example.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

import numpy as np
import pandas as pd

from olakit.config import STATS, Stats
from olakit.errors import DataError
from olakit.names import NON_TEMPLATES, REGEX_VOTE, VERIFIED_SUFFIX

QUESTION = "question"
"""The name of the question facet in the tables."""
RESIDUAL = "residual"
"""The name of the residual: the spread within cells (repeats), or the interaction of every factor without them."""
JOIN = "×"


@dataclass(frozen=True)
class Grid:
    """A balanced crossed design: ``y`` of shape (questions, levels of each facet..., repeats), its factor names
    (``question`` first, then ``facets``), each facet's levels, the questions kept and those left out."""

    y: np.ndarray
    facets: tuple[str, ...]
    levels: dict
    questions: list
    left_out: list

    @property
    def factors(self) -> tuple[str, ...]:
        return (QUESTION, *self.facets)

    @property
    def repeats(self) -> int:
        return self.y.shape[-1]


def grid_of(
    records: pd.DataFrame, facets: Sequence[str] | None = None, repeat: str | None = None, outcome: str = "correct"
) -> Grid:
    """The crossed design of ``records``: one row per (question, facet levels, repeat). ``facets`` (default: the
    condition columns that vary among the records of single templates: template, note strategy, note count, run,
    model; a column that varies only with another is folded into it) and ``repeat`` (default ``sample`` where its
    values vary). Votes and baselines are not levels of a crossed facet (a vote is computed from the templates):
    they are left out of the default records. Questions lacking a cell or a repeat are left out and listed."""
    df = records
    if facets is None:
        if "template" in df:
            single = ~df["template"].isin([*NON_TEMPLATES, REGEX_VOTE]) & ~df["template"].str.endswith(VERIFIED_SUFFIX)
            df = df[single]
        facets = _varying(df)
    facets = list(facets)
    if repeat is None and "sample" in df and df["sample"].nunique() > 1:
        repeat = "sample"
    missing = [c for c in [*facets, "question_id", outcome] + ([repeat] if repeat else []) if c not in df]
    if missing:
        raise DataError(f"records without the column(s) {missing}: a grid needs question_id, {outcome} and its facets")
    if not facets:
        raise DataError("a grid needs at least one facet that varies (a template, a note strategy, a run)")
    keys = [*facets] + ([repeat] if repeat else [])
    levels = {f: list(dict.fromkeys(df[f].astype(str))) for f in keys}
    cells = prod(len(levels[f]) for f in keys)
    counts = df.groupby("question_id", sort=False).size()
    full = df.assign(**{f: df[f].astype(str) for f in keys}).drop_duplicates(["question_id", *keys])
    per = full.groupby("question_id", sort=False).size()
    kept = [q for q in per.index if per[q] == cells]
    left = [q for q in counts.index if q not in set(kept)]
    if not kept:
        raise DataError(f"no question has every one of the grid's {cells} cells ({', '.join(keys)})")
    full = full[full["question_id"].isin(kept)]
    shape = (len(kept), *(len(levels[f]) for f in keys))
    y = np.zeros(shape, dtype=float)
    index = [full["question_id"].map({q: i for i, q in enumerate(kept)}).to_numpy()]
    index += [full[f].map({v: i for i, v in enumerate(levels[f])}).to_numpy() for f in keys]
    y[tuple(index)] = full[outcome].astype(float).to_numpy()
    if not repeat:
        y = y[..., None]
    return Grid(y, tuple(facets), {f: levels[f] for f in facets}, kept, left)


def _varying(df: pd.DataFrame) -> list[str]:
    """The condition columns that vary, a column that varies only with an earlier one folded into it (note counts
    that are fixed per strategy are the strategy's)."""
    out: list[str] = []
    for c in ("run", "model", "template", "notes_strategy", "n_notes", "row", "loop", "iteration"):
        if c not in df or df[c].nunique() < 2:
            continue
        if any(df.groupby(o)[c].nunique().max() == 1 and df.groupby(c)[o].nunique().max() == 1 for o in out):
            continue  # the same partition as a facet already taken
        if any(df.groupby(o)[c].nunique().max() == 1 for o in out):
            continue  # nested in a facet already taken (it adds no crossed level)
        out.append(c)
    return out


def _effects(k: int) -> list[tuple[int, ...]]:
    """Every non-empty subset of the k factors' axes, by size then order."""
    return [e for size in range(1, k + 1) for e in itertools.combinations(range(k), size)]


def _components(y: np.ndarray, lead: int = 0) -> tuple[dict, dict, dict, dict]:
    """(SS, df, MS, sigma2) of every effect (tuples of factor positions) and the residual (key ``()``) of the crossed
    array ``y`` (factors..., repeats); with ``lead`` leading axes (bootstrap draws), each value an array over them."""
    k = y.ndim - 1 - lead
    n = y.shape[lead : lead + k]
    r = y.shape[-1]
    cell = y.mean(axis=-1)
    axes = lambda e: tuple(lead + a for a in e)  # noqa: E731
    every = axes(range(k))
    means = {}
    for size in range(k + 1):
        for s in itertools.combinations(range(k), size):
            others = axes(a for a in range(k) if a not in s)
            means[s] = cell.mean(axis=others, keepdims=True) if others else cell
    ss = {}
    for e in _effects(k):
        alpha = sum(
            (-1) ** (len(e) - len(s)) * means[s] for size in range(len(e) + 1) for s in itertools.combinations(e, size)
        )
        # each level of E is one entry of alpha's reduced shape: SS counts it once per cell of the other factors
        ss[e] = r * prod(n[a] for a in range(k) if a not in e) * (alpha**2).sum(axis=every)
    if r > 1:
        ss[()] = ((y - cell[..., None]) ** 2).sum(axis=(*every, y.ndim - 1))
    return _solved(ss, n, r)


def _solved(ss: dict, n: Sequence[int], r: int) -> tuple[dict, dict, dict, dict]:
    """(SS, df, MS, sigma2) from the sums of squares ``ss`` of a crossed design of factor sizes ``n`` and ``r``
    repeats: the ANOVA estimators, each component its expected mean square less those of the effects above it."""
    k = len(n)
    df = {e: prod(n[a] - 1 for a in e) for e in _effects(k)} | ({(): prod(n) * (r - 1)} if r > 1 else {})
    ms = {}
    for e in ss:
        ms[e] = ss[e] / df[e] if df[e] else np.nan * ss[e]
    sigma: dict = {}
    if r > 1:
        sigma[()] = ms[()]
    for e in sorted(_effects(k), key=len, reverse=True):
        expected = ms[e] - (sigma[()] if r > 1 else 0.0)
        for bigger in _effects(k):
            if len(bigger) > len(e) and set(e) <= set(bigger):
                expected = expected - sigma[bigger] * r * prod(n[a] for a in range(k) if a not in bigger)
        sigma[e] = expected / (r * prod(n[a] for a in range(k) if a not in e))
    return ss, df, ms, sigma


def _drawn(y: np.ndarray, picks: np.ndarray) -> dict:
    """The components (sigma2 by effect) of each resampled grid ``y[picks[b]]`` (questions drawn with replacement),
    computed from how often each question is drawn (weights w) instead of the resampled grids themselves: what
    ``_components(y[picks], lead=1)`` gives, in matrix products over the questions. For an effect with the question
    in it, alpha = A (the terms of the question's own marginal means, the same in every draw) + B (the terms of means
    over the questions, a draw's), and the sum over the drawn questions of alpha^2 is
    w @ A^2 + 2 B (w @ A) + n_q B^2 per level of the effect's other factors."""
    k = y.ndim - 1
    n, r, n_q = y.shape[:k], y.shape[-1], y.shape[0]
    w = np.stack([np.bincount(p, minlength=n_q) for p in picks]).astype(float)  # (draws, questions)
    cell = y.mean(axis=-1)
    drawn_mean = (w @ cell.reshape(n_q, -1) / n_q).reshape((len(picks), 1, *n[1:]))  # the cell means over questions
    fixed, varying = {}, {}  # marginal means: with the question (per question), without it (per draw)
    for size in range(k + 1):
        for s in itertools.combinations(range(k), size):
            others = tuple(a for a in range(k) if a not in s)
            if 0 in s:
                fixed[s] = cell.mean(axis=others, keepdims=True) if others else cell
            else:
                rest = tuple(1 + a for a in others if a != 0)
                varying[s] = drawn_mean.mean(axis=rest, keepdims=True) if rest else drawn_mean
    ss = {}
    for e in _effects(k):
        terms = [((-1) ** (len(e) - len(s)), s) for size in range(len(e) + 1) for s in itertools.combinations(e, size)]
        b = sum(sign * varying[s] for sign, s in terms if 0 not in s)  # (draws, 1, ...)
        times = r * prod(n[a] for a in range(k) if a not in e)
        if 0 not in e:
            ss[e] = times * (b**2).reshape(len(picks), -1).sum(axis=1)  # times counts the questions
            continue
        a = sum(sign * fixed[s] for sign, s in terms if 0 in s)  # (questions, ...)
        shape = np.broadcast_shapes(a.shape[1:], b.shape[2:])
        a2 = np.broadcast_to(a, (n_q, *shape)).reshape(n_q, -1)
        b2 = np.broadcast_to(b, (len(picks), 1, *shape)).reshape(len(picks), -1)
        ss[e] = times * ((w @ a2**2).sum(axis=1) + 2 * (b2 * (w @ a2)).sum(axis=1) + n_q * (b2**2).sum(axis=1))
    if r > 1:
        ss[()] = w @ ((y - cell[..., None]) ** 2).reshape(n_q, -1).sum(axis=1)
    return _solved(ss, n, r)[3]


def _name(e: tuple[int, ...], factors: Sequence[str], repeats: int) -> str:
    if e == ():
        return RESIDUAL
    name = JOIN.join(factors[a] for a in e)
    return f"{name} ({RESIDUAL})" if repeats == 1 and len(e) == len(factors) else name


def variance_table(grid: Grid, stats: Stats = STATS) -> pd.DataFrame:
    """One row per effect (question, each facet, their interactions) and the residual: df, SS, MS, the variance
    component (negative estimates shown as 0, ``negative`` True), its share of the total, and its percentile interval
    over questions drawn with replacement (``stats.n_boot`` draws, seed ``stats.analysis_seed``)."""
    ss, df, ms, sigma = (
        dict((k, float(v)) for k, v in part.items()) if i != 1 else part for i, part in enumerate(_components(grid.y))
    )
    keys = list(sigma)
    order = sorted(keys, key=lambda e: (len(e) == 0, len(e), e))
    shown = {e: max(0.0, sigma[e]) for e in keys}
    total = sum(v for v in shown.values() if np.isfinite(v))
    rng = np.random.default_rng(stats.analysis_seed)
    n_q = grid.y.shape[0]
    picks = rng.integers(0, n_q, (stats.n_boot if n_q > 1 else 0, n_q))
    draws = {e: [] for e in keys}
    block = max(1, 4_000_000 // grid.y.size)  # draws at a time: about 32 MB of weights and products
    for start in range(0, len(picks), block):
        s = _drawn(grid.y, picks[start : start + block])
        for e in keys:
            draws[e].append(np.maximum(s[e], 0.0))
    lo_q, hi_q = (1 - stats.level) / 2, 1 - (1 - stats.level) / 2
    rows = []
    for e in order:
        d = np.concatenate(draws[e]) if draws[e] else np.array([])
        rows.append(
            {
                "effect": _name(e, grid.factors, grid.repeats),
                "df": df[e],
                "ss": ss[e],
                "ms": ms[e],
                "component": shown[e],
                "negative": bool(sigma[e] < 0),
                "share": shown[e] / total if total else float("nan"),
                "ci_low": float(np.quantile(d, lo_q)) if d.size else float("nan"),
                "ci_high": float(np.quantile(d, hi_q)) if d.size else float("nan"),
            }
        )
    out = pd.DataFrame(rows)
    out.attrs.update(questions=n_q, left_out=len(grid.left_out), levels={f: len(v) for f, v in grid.levels.items()},
                     repeats=grid.repeats)  # fmt: skip
    return out


def components_by_name(table: pd.DataFrame) -> dict[str, float]:
    """A variance table's components by effect name, the residual under ``residual`` whatever its label."""
    out = {}
    for name, value in zip(table["effect"], table["component"]):
        out[RESIDUAL if name.endswith(f"({RESIDUAL})") or name == RESIDUAL else name] = float(value)
    return out


def _sum(components: dict[str, float], names) -> float:
    return sum(components.get(n, 0.0) for n in names)


def standard_errors(
    components: dict[str, float],
    facets: Sequence[str],
    n_questions: int,
    repeats: int = 1,
    levels: dict | None = None,
    within: float | None = None,
) -> dict[str, float]:
    """The decision study's standard errors at ``n_questions`` questions, ``repeats`` answers averaged per cell and,
    for a mean over a facet, ``levels[facet]`` levels of it drawn at random. ``within``: the part of the residual that
    is the spread of one cell's repeated answers (a grid with repeats: all of it; without, what a replicate or the
    repeats analysis measured; none: 0, and repeats reduce nothing). With e = within and i = residual - e:

    - ``cell``: one cell's accuracy (every facet fixed): (every component with the question in it, i included) / n_q
      + e / (n_q n_r);
    - ``difference:F``: two cells that differ in facet F alone, on the same questions (paired): twice (the components
      with the question and F in them, i included) / n_q + 2 e / (n_q n_r) (the question's effect and its
      interactions without F cancel);
    - ``mean over F``: the accuracy averaged over n_F levels of F drawn at random, the other facets fixed: F's
      components without the question / n_F + the question's without F / n_q + those with both (i included) /
      (n_q n_F) + e / (n_q n_F n_r).
    """
    levels = dict(levels or {})
    residual = components.get(RESIDUAL, 0.0)
    e = min(residual, within) if within is not None else 0.0
    inter = residual - e
    q_effects = [n for n in components if n == QUESTION or n.startswith(QUESTION + JOIN)]
    r = max(1, repeats)
    out = {"cell": (_sum(components, q_effects) / n_questions + inter / n_questions + e / (n_questions * r)) ** 0.5}
    for f in facets:
        with_f = [n for n in q_effects if f in n.split(JOIN)]
        diff = 2 * (_sum(components, with_f) + inter) / n_questions + 2 * e / (n_questions * r)
        out[f"difference:{f}"] = diff**0.5
        n_f = levels.get(f, 1)
        f_only = [n for n in components if n != RESIDUAL and f in n.split(JOIN) and QUESTION not in n.split(JOIN)]
        q_no_f = [n for n in q_effects if f not in n.split(JOIN)]
        var = _sum(components, f_only) / n_f + _sum(components, q_no_f) / n_questions
        var += (_sum(components, with_f) + inter) / (n_questions * n_f) + e / (n_questions * n_f * r)
        out[f"mean over {f}"] = var**0.5
    return out


def decision(
    table: pd.DataFrame,
    facets: Sequence[str],
    questions: Sequence[int] = (50, 100, 254, 500, 1000),
    repeats: Sequence[int] = (1, 3, 5),
) -> pd.DataFrame:
    """The decision study: for each number of questions and repeats, the standard error of a cell's accuracy, of a
    paired difference in each facet, and of the mean over each facet's levels (at the grid's own number of levels),
    with the calls that design makes per cell (n_q * n_r). Repeats reduce only the spread of a cell's repeated
    answers, which a grid without repeats cannot tell from the interaction of every factor: there, more repeats
    change nothing here (the repeats analysis, olakit.analysis.variance.repeats_table, measures that spread)."""
    comps = components_by_name(table)
    levels = dict(table.attrs.get("levels", {}))
    within = comps.get(RESIDUAL, 0.0) if table.attrs.get("repeats", 1) > 1 else None
    repeats = repeats if within is not None else (1,)  # without repeats in the grid, more of them change nothing
    rows = []
    for n_q, n_r in itertools.product(questions, repeats):
        se = standard_errors(comps, facets, n_q, n_r, levels, within)
        rows.append(
            {"questions": n_q, "repeats": n_r, "calls_per_cell": n_q * n_r, **{f"se_{k}": v for k, v in se.items()}}
        )
    return pd.DataFrame(rows)


def cheapest(
    table: pd.DataFrame,
    target: float,
    what: str = "cell",
    *,
    max_questions: int = 100_000,
    max_repeats: int = 10,
    price_per_call: float | None = None,
) -> dict:
    """The design with the fewest calls per cell (n_q * n_r; with a facet mean, n_q * n_r * n_F) whose standard error
    of ``what`` (``cell``, ``difference:FACET`` or ``mean over FACET``) is at most ``target``; its price where a price
    per call is given (the plan's: olakit.olagpt.budget); of designs with as many calls, the one with the fewest repeats
    (then facet levels). None of the designs up to the limits: ``reachable`` False."""
    comps = components_by_name(table)
    facets = [f for f in table.attrs.get("levels", {})]
    within = comps.get(RESIDUAL, 0.0) if table.attrs.get("repeats", 1) > 1 else None
    facet = what.removeprefix("mean over ") if what.startswith("mean over ") else None
    best = None
    for n_r in range(1, max_repeats + 1):
        for n_f in range(1, 51) if facet else [1]:
            levels = {facet: n_f} if facet else {}
            lo, hi = 1, max_questions
            if standard_errors(comps, facets, hi, n_r, levels, within)[what] > target:
                continue
            while lo < hi:  # the standard error falls as the questions grow: the fewest that reach the target
                mid = (lo + hi) // 2
                if standard_errors(comps, facets, mid, n_r, levels, within)[what] <= target:
                    hi = mid
                else:
                    lo = mid + 1
            calls = lo * n_r * n_f
            if best is None or calls < best["calls"]:
                best = {"questions": lo, "repeats": n_r, **({"levels": n_f} if facet else {}), "calls": calls}
    if best is None:
        return {"what": what, "target": target, "reachable": False}
    se = standard_errors(
        comps, facets, best["questions"], best["repeats"], {facet: best.get("levels", 1)} if facet else {}
    )
    out = {"what": what, "target": target, "reachable": True, **best, "se": se[what]}
    if price_per_call is not None:
        out["price"] = best["calls"] * price_per_call
    return out


# ---- clustered standard errors


def clustered_se(values, clusters) -> dict:
    """The standard error of the mean of ``values`` (a cell's correctness, or a pair's differences y_a - y_b per
    question) when the questions come in ``clusters`` (a shared passage, a source, a question type): the independent
    one, sqrt(s^2 / n) with the sample variance s^2, beside the cluster-robust one, sqrt(G / (G - 1) * sum over
    clusters of (sum of its deviations from the mean)^2) / n, and the design effect (their ratio, squared).

    >>> r = clustered_se([1, 1, 0, 0], ["a", "a", "b", "b"])
    >>> round(r["se"], 4), round(r["se_clustered"], 4), r["clusters"]
    (0.2887, 0.5, 2)
    """
    x = np.asarray(values, float)
    g = pd.Series(np.asarray(clusters)).astype(str).to_numpy()
    n = x.size
    if n < 2:
        return {"n": n, "clusters": len(set(g)), "mean": float(x.mean()) if n else float("nan"), "se": float("nan"),
                "se_clustered": float("nan"), "design_effect": float("nan")}  # fmt: skip
    mean = x.mean()
    se = float(np.sqrt(x.var(ddof=1) / n))
    sums = pd.Series(x - mean).groupby(g).sum().to_numpy()
    k = sums.size
    se_c = float(np.sqrt(k / (k - 1) * (sums**2).sum()) / n) if k > 1 else float("nan")
    return {"n": n, "clusters": k, "mean": float(mean), "se": se, "se_clustered": se_c,
            "design_effect": (se_c / se) ** 2 if se else float("nan")}  # fmt: skip


def clustered_table(outcomes: pd.DataFrame, clusters: dict) -> pd.DataFrame:
    """Each cell's accuracy and each pair's paired difference (outcomes: questions x cells, olakit.analysis
    .inference.cell_outcomes) with the independent and the cluster-robust standard error and the design effect;
    ``clusters``: question id -> cluster. Questions without a cluster are each a cluster of their own."""
    rows = []
    own = [clusters.get(q, f"\x00{q}") for q in outcomes.index]
    for c in outcomes.columns:
        keep = outcomes[c].notna().to_numpy()
        rows.append({"cell": c, "b": "", **clustered_se(outcomes[c][keep].astype(float), np.asarray(own)[keep])})
    for a, b in itertools.combinations(outcomes.columns, 2):
        keep = (outcomes[a].notna() & outcomes[b].notna()).to_numpy()
        d = outcomes[a][keep].astype(float).to_numpy() - outcomes[b][keep].astype(float).to_numpy()
        rows.append({"cell": a, "b": b, **clustered_se(d, np.asarray(own)[keep])})
    return pd.DataFrame(rows).rename(columns={"cell": "a", "mean": "accuracy_or_difference"})


# ---- repeats: the noise of one cell's answers


def repeats_table(
    records: pd.DataFrame, repeat: str = "sample", cells: Sequence[str] = ("template", "notes_strategy")
) -> pd.DataFrame:
    """Per cell with K > 1 answers per question (samples, replicates, imported epochs): the within-question variance
    (the mean over questions of the unbiased variance of its K answers, s_w^2), the between-question variance of the
    questions' true accuracies (var of the question means, less s_w^2 / K; at least 0), the share of one answer's
    variance that is resampling noise, s_w^2 / (s_w^2 + s_b^2), and the variance of a question's mean over K
    answers against one answer's (s_b^2 + s_w^2 / K against s_b^2 + s_w^2). A cell whose questions have unequal
    numbers of answers has no row."""
    cells = [c for c in cells if c in records]
    rows = []
    for key, g in records.groupby(cells, sort=False) if cells else [((), records)]:
        per = g.groupby("question_id")["correct"].agg(["count", "mean", lambda v: np.var(np.asarray(v, float), ddof=1)
                                                       if len(v) > 1 else np.nan])  # fmt: skip
        per.columns = ["k", "mean", "var"]
        k = int(per["k"].min()) if len(per) else 0
        if k < 2 or per["k"].nunique() != 1:
            continue
        within = float(per["var"].mean())
        between = max(0.0, float(per["mean"].var(ddof=1)) - within / k) if len(per) > 1 else float("nan")
        one = between + within
        rows.append({**dict(zip(cells, key if isinstance(key, tuple) else (key,))), "questions": len(per), "k": k,
                     "within": within, "between": between, "noise_share": within / one if one else float("nan"),
                     "var_one_answer": one, "var_mean_of_k": between + within / k,
                     "reduction": (between + within / k) / one if one else float("nan")})  # fmt: skip
    return pd.DataFrame(rows)


def grid_tables(records: pd.DataFrame, stats: Stats = STATS, facets: Sequence[str] | None = None) -> dict:
    """A result's ``variance`` (variance_table) and ``decision`` (decision, at the grid's own number of questions
    too) tables over its crossed grid (grid_of); none where the records have no facet that varies."""
    try:
        grid = grid_of(records, facets)
    except DataError:
        return {}
    table = variance_table(grid, stats)
    n = table.attrs["questions"]
    questions = sorted({n, 50, 100, 500, 1000})
    return {"variance": table, "decision": decision(table, grid.facets, questions=questions)}
