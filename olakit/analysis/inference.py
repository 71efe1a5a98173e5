"""Paired inference between cells (method x strategy) answered on the same questions: exact McNemar (binomial),
a paired bootstrap of the accuracy difference, and Holm-corrected p-values; ``holm_matrix`` lays them out as a
Table 3 matrix. Pure pandas/numpy; no LLM calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from math import comb

import numpy as np
import pandas as pd

from olakit.analysis.tables import ordered_strategies, sc_vote
from olakit.answering.vote import regex_vote
from olakit.config import STATS, Stats
from olakit.names import AUTO_COT, CHOSEN_VOTE, LLM_VOTE, REGEX_VOTE, SC
from olakit.settings import ANALYSIS, Analysis


def cell_outcomes(
    df: pd.DataFrame, templates: Sequence[str], analysis: Analysis = ANALYSIS, vote: bool = True
) -> pd.DataFrame:
    """Correctness per question (rows) and cell (columns "method | strategy"): templates at sample 0, the regex
    vote (without ``vote``: none), SC, and single-answer methods (auto_cot, llm_vote, the chosen vote) when
    present; a cell a question lacks is empty (a pair is tested on the questions both answered)."""
    parts = []
    base = df[df["template"].isin(templates) & (df["sample"] == 0)]
    for t in templates:
        g = base[base["template"] == t]
        parts.append(g.assign(method=t)[["method", "notes_strategy", "question_id", "correct"]])
    if vote:
        parts.append(regex_vote(base, templates, analysis).assign(method=REGEX_VOTE)[
            ["method", "notes_strategy", "question_id", "correct"]])  # fmt: skip
    if (df["template"] == SC).any():
        parts.append(
            sc_vote(df, analysis=analysis).assign(method=SC)[["method", "notes_strategy", "question_id", "correct"]]
        )
    for m in (AUTO_COT, LLM_VOTE, CHOSEN_VOTE):
        g = df[df["template"] == m]
        if len(g):
            parts.append(g.assign(method=m)[["method", "notes_strategy", "question_id", "correct"]])
    long = pd.concat(parts, ignore_index=True)
    long["cell"] = long["method"] + " | " + long["notes_strategy"]
    return long.pivot_table(index="question_id", columns="cell", values="correct", aggfunc="first", sort=False)


def mcnemar_exact(a, b) -> tuple[int, int, float]:
    """Discordant counts (a right & b wrong, a wrong & b right) and the exact two-sided McNemar p-value: the
    binomial test of the discordant pairs, 2 x P(X <= min) for X ~ Bin(n10 + n01, 1/2), at most 1, summed in exact
    integers (statsmodels' ``mcnemar(exact=True)`` gets the same from scipy; tests/test_statistics.py compares).

    ``mcnemar_exact([1, 1, 0], [0, 0, 0]) -> (2, 0, 0.5)``
    """
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    n10, n01 = int((a & ~b).sum()), int((~a & b).sum())
    n = n10 + n01
    if n == 0:
        return n10, n01, 1.0
    term = tail = 1  # C(n, 0); C(n, i + 1) = C(n, i) (n - i) / (i + 1), exact in integers
    for i in range(min(n10, n01)):
        term = term * (n - i) // (i + 1)
        tail += term
    return n10, n01, min(1.0, 2 * tail / 2**n)


def _resample(n: int, n_boot: int, seed: int) -> np.ndarray:
    """Row indices of ``n_boot`` resamples of ``n`` questions with replacement."""
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def _interval(means: np.ndarray, differs: bool, level: float) -> tuple[float, float, float]:
    """Percentile CI (at ``level``) of resampled mean differences and the two-sided p: the share of resampled
    differences on the other side of zero, doubled (1 when the two never differ)."""
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    p = min(1.0, 2 * min((means <= 0).mean(), (means >= 0).mean())) if differs else 1.0
    return float(lo), float(hi), float(p)


def _intervals(means: np.ndarray, differs, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """_interval for each row of ``means`` (one pair's resampled differences a row), computed at once."""
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2], axis=1)
    p = np.minimum(1.0, 2 * np.minimum((means <= 0).mean(1), (means >= 0).mean(1)))
    return lo, hi, np.where(np.asarray(differs, bool), p, 1.0)


def paired_bootstrap(a, b, analysis: Stats = STATS) -> tuple[float, float, float, float]:
    """Accuracy difference a - b, its 95% CI and a two-sided p-value, resampling questions (pairs kept)."""
    d = np.asarray(a, float) - np.asarray(b, float)
    means = d[_resample(d.size, analysis.n_boot, analysis.analysis_seed)].mean(axis=1)
    return (float(d.mean()), *_interval(means, bool(d.any()), analysis.level))


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values: sorted ascending, the i-th (from 0) times m - i, running maximum, at most 1 (what
    statsmodels' multipletests(method="holm") computes; tests/test_statistics.py compares the two).

    >>> holm([0.01, 0.04, 0.03]).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(pvalues, float)
    if not p.size:
        return p
    order = np.argsort(p)
    adjusted = np.minimum(np.maximum.accumulate(p[order] * np.arange(p.size, 0, -1)), 1)
    out = np.empty_like(adjusted)
    out[order] = adjusted
    return out


def mcnemar_midp(a, b) -> tuple[int, int, float]:
    """Discordant counts and the two-sided mid-p McNemar p-value: 2 x (P(X < k) + P(X = k) / 2) for k the smaller
    discordant count, X ~ Bin(n10 + n01, 1/2), at most 1 (the exact p less the probability of the observed count).

    ``mcnemar_midp([1, 1, 0], [0, 0, 0]) -> (2, 0, 0.25)``
    """
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    n10, n01 = int((a & ~b).sum()), int((~a & b).sum())
    n, k = n10 + n01, min(n10, n01)
    if n == 0:
        return n10, n01, 1.0
    below = sum(comb(n, i) for i in range(k))  # P(X < k) * 2^n, in exact integers
    return n10, n01, min(1.0, (2 * below + comb(n, k)) / 2**n)


TESTS = {"exact": ("exact McNemar", mcnemar_exact), "mid-p": ("mid-p McNemar", mcnemar_midp)}
"""The paired tests by their setting (Stats.mcnemar): the name the tables give, and the function."""


def mcnemar(a, b, stats: Stats = STATS) -> tuple[int, int, float]:
    """The paired test the settings name (Stats.mcnemar): mcnemar_exact or mcnemar_midp."""
    return TESTS[stats.mcnemar][1](a, b)


def paired_tests(outcomes: pd.DataFrame, cells: Sequence[str] | None = None, analysis: Stats = STATS) -> pd.DataFrame:
    """All pairs of cells on the questions both answered: accuracies, discordant counts, exact McNemar p,
    paired-bootstrap difference with CI and p, Holm-adjusted p-values (over all pairs), and significance at the
    analysis settings' alpha."""
    cells = list(cells) if cells is not None else list(outcomes.columns)
    col = {c: i for i, c in enumerate(cells)}
    present = outcomes[cells].notna().to_numpy()
    values = outcomes[cells].fillna(False).astype(bool).to_numpy()
    # vectorised, and exactly paired_bootstrap's numbers: every pair answered on the same questions draws the same
    # resamples (one seed), so each cell's resampled sums are computed once and a pair's mean differences are
    # (sum_a - sum_b) / n, the same integers divided by n as the mean of the resampled differences
    draws: dict[bytes, np.ndarray] = {}
    sums: dict[tuple[bytes, int], np.ndarray] = {}

    def resampled_sums(keep: np.ndarray, key: bytes, i: int) -> np.ndarray:
        if key not in draws:
            draws[key] = _resample(int(keep.sum()), analysis.n_boot, analysis.analysis_seed)
        if (key, i) not in sums:
            sums[key, i] = values[keep, i][draws[key]].sum(axis=1)
        return sums[key, i]

    rows, resampled = [], []
    for a, b in combinations(cells, 2):
        keep = present[:, col[a]] & present[:, col[b]]
        key = keep.tobytes()
        x, y = values[keep, col[a]], values[keep, col[b]]
        n10, n01, p_mc = mcnemar(x, y, analysis)
        n = int(keep.sum())
        resampled.append((resampled_sums(keep, key, col[a]) - resampled_sums(keep, key, col[b])) / n)
        rows.append(
            {
                "a": a,
                "b": b,
                "n": n,
                "acc_a": x.mean(),
                "acc_b": y.mean(),
                "a_only": n10,
                "b_only": n01,
                "p_mcnemar": p_mc,
                "diff": float((x.astype(float) - y.astype(float)).mean()),
                "differs": bool((x != y).any()),
            }
        )
    for start in range(0, len(rows), 256):  # the intervals of many pairs at once: _interval's numbers, row by row
        block = rows[start : start + 256]
        lo, hi, p_bs = _intervals(np.stack(resampled[start : start + 256]), [r.pop("differs") for r in block],
                                  analysis.level)  # fmt: skip
        for r, low, high, p in zip(block, lo, hi, p_bs):
            r |= {"diff_ci_low": float(low), "diff_ci_high": float(high), "p_bootstrap": float(p)}
    out = pd.DataFrame(rows, columns=list(PAIRED_COLUMNS[:-4]))  # one cell: no pair, the table's columns all the same
    out["p_mcnemar_holm"] = holm(out["p_mcnemar"]) if len(out) else []
    out["p_bootstrap_holm"] = holm(out["p_bootstrap"]) if len(out) else []
    out["significant"] = (out["p_mcnemar_holm"] < analysis.alpha).astype(bool)
    out["test"] = TESTS[analysis.mcnemar][0]  # the paired test used, named in every table (Stats.mcnemar)
    return out


PAIRED_COLUMNS = ("a", "b", "n", "acc_a", "acc_b", "a_only", "b_only", "p_mcnemar", "diff", "diff_ci_low",
                  "diff_ci_high", "p_bootstrap", "p_mcnemar_holm", "p_bootstrap_holm", "significant",
                  "test")  # fmt: skip
"""The columns of paired_tests, in order (also when there is no pair)."""


def holm_matrix(tests: pd.DataFrame, value: str = "p_mcnemar_holm") -> pd.DataFrame:
    """Square matrix of a pairwise column (default: Holm-adjusted McNemar p) over the cells. Cells named
    "method | strategy" are ordered by method (as they come) and, within one, by strategy in the paper's order, so
    every method's rows follow the same strategy order."""
    cells = list(dict.fromkeys([*tests["a"], *tests["b"]]))
    if cells and all(" | " in c for c in cells):
        parts = [c.split(" | ", 1) for c in cells]
        methods = list(dict.fromkeys(m for m, _ in parts))
        strategies = ordered_strategies([s for _, s in parts])
        cells = [f"{m} | {s}" for m, s in sorted(parts, key=lambda p: (methods.index(p[0]), strategies.index(p[1])))]
    at = {c: i for i, c in enumerate(cells)}
    m = np.full((len(cells), len(cells)), np.nan)
    a, b = [tests[col].map(at).to_numpy(dtype=int) for col in ("a", "b")]
    m[a, b] = m[b, a] = tests[value].to_numpy(dtype=float)
    return pd.DataFrame(m, index=cells, columns=cells)


def tie_group(tests: pd.DataFrame, accuracy: dict, analysis: Stats = STATS) -> pd.DataFrame:
    """The cells statistically tied with the best: the cell of highest accuracy (``accuracy``: cell -> accuracy;
    the first of equals in its order), then each other cell's paired test against it (``tests``: paired_tests, the
    settings' McNemar test) Holm-corrected over that family (the k - 1 comparisons with the best), tied where the
    corrected p is not below alpha. Columns: cell, accuracy, p_vs_best, p_vs_best_holm, tied_with_best (the best
    itself: True, its p empty), best (True for the best).

    >>> t = pd.DataFrame({"a": ["A", "A"], "b": ["B", "C"], "p_mcnemar": [0.2, 0.001]})
    >>> tie_group(t, {"A": 0.8, "B": 0.7, "C": 0.3})[["cell", "tied_with_best"]].values.tolist()
    [['A', True], ['B', True], ['C', False]]
    """
    cells = [c for c in accuracy if pd.notna(accuracy[c])]
    if not cells:
        return pd.DataFrame(columns=["cell", "accuracy", "p_vs_best", "p_vs_best_holm", "tied_with_best", "best"])
    best = max(cells, key=lambda c: accuracy[c])  # max keeps the first of equals
    others = [c for c in cells if c != best]
    p = []
    for c in others:
        hit = tests[((tests["a"] == best) & (tests["b"] == c)) | ((tests["a"] == c) & (tests["b"] == best))]
        p.append(float(hit["p_mcnemar"].iloc[0]) if len(hit) else float("nan"))
    known = [i for i, x in enumerate(p) if not np.isnan(x)]
    adjusted = np.full(len(p), np.nan)
    adjusted[known] = holm([p[i] for i in known])
    rows = [{"cell": best, "accuracy": accuracy[best], "p_vs_best": np.nan, "p_vs_best_holm": np.nan,
             "tied_with_best": True, "best": True}]  # fmt: skip
    for c, raw, adj in zip(others, p, adjusted):
        tied = bool(np.isnan(adj) or adj >= analysis.alpha)  # no paired test: not shown to differ
        rows.append({"cell": c, "accuracy": accuracy[c], "p_vs_best": raw, "p_vs_best_holm": adj,
                     "tied_with_best": tied, "best": False})  # fmt: skip
    return pd.DataFrame(rows)
