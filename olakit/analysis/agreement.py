"""Agreement between templates: Cohen's kappa per pair and Fleiss' kappa per strategy (numpy, the formulas of
scikit-learn's cohen_kappa_score and statsmodels' fleiss_kappa, which tests/test_statistics.py checks them against)
of the extracted answers (unparsed counts as its own category), the error-overlap matrix (questions
both got wrong), the pairwise matrix the heatmap explorer shows, and ``leave_one_out`` (the vote without each
template: the one whose removal costs least adds least). Pure pandas/numpy; no LLM calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from olakit.analysis.tables import ordered_strategies, sort_rows
from olakit.answering.vote import answer_matrix, regex_vote
from olakit.settings import ANALYSIS, Analysis


def cohen_kappa(a, b) -> float:
    """Cohen's kappa of two raters' labels; NaN when both give one label throughout (kappa is then 0/0).

    >>> cohen_kappa(["A", "A", "B", "B"], ["A", "B", "B", "B"])
    0.5
    """
    a, b = np.asarray(list(a), dtype=object), np.asarray(list(b), dtype=object)
    labels = sorted(set(a) | set(b), key=str)
    if len(set(a)) <= 1 and len(set(b)) <= 1:
        return float("nan")
    index = {label: i for i, label in enumerate(labels)}
    confusion = np.zeros((len(labels), len(labels)))
    np.add.at(confusion, ([index[x] for x in a], [index[y] for y in b]), 1)
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / confusion.sum()
    disagree = 1 - np.eye(len(labels))
    return float(1 - (disagree * confusion).sum() / (disagree * expected).sum())


def fleiss_kappa(labels: np.ndarray) -> float:
    """Fleiss' kappa of a subjects x raters array of labels (every subject rated by every rater).

    >>> fleiss_kappa(np.array([["A", "A"], ["B", "B"]]))
    1.0
    """
    cats = {c: i for i, c in enumerate(sorted(set(labels.ravel().tolist()), key=str))}
    table = np.zeros((labels.shape[0], len(cats)))
    for j in range(labels.shape[1]):
        np.add.at(table, (np.arange(labels.shape[0]), [cats[x] for x in labels[:, j]]), 1)
    raters = table.sum(axis=1).max()
    if raters < 2:  # one rater: agreement between raters is undefined
        return float("nan")
    p_cat = table.sum(axis=0) / table.sum()
    p_subject = ((table * table).sum(axis=1) - raters) / (raters * (raters - 1.0))
    expected = (p_cat * p_cat).sum()
    if expected == 1:  # one label everywhere: agreement by chance is certain, kappa undefined
        return float("nan")
    return float((p_subject.mean() - expected) / (1 - expected))


def agreement(df: pd.DataFrame, templates: Sequence[str]) -> dict[str, pd.DataFrame]:
    """Per strategy: pairwise Cohen's kappa, Fleiss' kappa, and the error-overlap matrix (both wrong); every pair at
    once, in numpy over the question x template label matrix."""
    base = df[df["template"].isin(templates) & (df["sample"] == 0)]
    kappas, fleiss, overlap = [], [], []
    pairs = list(combinations(range(len(templates)), 2))
    ia, ib = (np.array([p[k] for p in pairs], dtype=int) for k in (0, 1))
    for strategy in ordered_strategies(base["notes_strategy"]):
        wide, gold = answer_matrix(base[base["notes_strategy"] == strategy], templates)
        labels = wide.fillna("unparsed").astype(str)
        values = labels.to_numpy()
        wrong = (labels.ne(gold.values, axis=0) | wide.isna()).to_numpy()
        kappa, agree = pairwise_kappa(values)
        both = wrong.T.astype(int) @ wrong.astype(int)
        n_wrong = wrong.sum(0)
        either = n_wrong[:, None] + n_wrong[None, :] - both
        for i, j in zip(ia, ib):
            a, b = templates[i], templates[j]
            kappas.append({"notes_strategy": strategy, "a": a, "b": b, "cohen_kappa": float(kappa[i, j]),
                           "agreement": float(agree[i, j])})  # fmt: skip
            overlap.append({"notes_strategy": strategy, "a": a, "b": b, "both_wrong": int(both[i, j]),
                            "jaccard_wrong": both[i, j] / either[i, j] if either[i, j] else np.nan})  # fmt: skip
        fleiss.append(
            {
                "notes_strategy": strategy,
                "n": len(labels),
                "raters": len(templates),
                "fleiss_kappa": fleiss_kappa(values),
            }
        )
    return {
        "cohen_kappa": pd.DataFrame(kappas),
        "fleiss_kappa": pd.DataFrame(fleiss),
        "error_overlap": pd.DataFrame(overlap),
    }


def pairwise_kappa(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Cohen's kappa, observed agreement) of every pair of columns of a subjects x raters label array: cohen_kappa
    for all pairs at once (NaN where both raters give one label throughout)."""
    codes, _ = pd.factorize(values.ravel())
    codes = codes.reshape(values.shape)
    n, m = codes.shape
    onehot = np.zeros((n, m, codes.max() + 1 if codes.size else 1))
    onehot[np.arange(n)[:, None], np.arange(m)[None, :], codes] = 1
    observed = np.einsum("nac,nbc->ab", onehot, onehot) / n
    shares = onehot.mean(0)  # (m, categories)
    expected = shares @ shares.T
    constant = (shares.max(1) == 1.0)[:, None] & (shares.max(1) == 1.0)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = np.where(constant, np.nan, (observed - expected) / (1 - expected))
    return kappa, observed


def leave_one_out(df: pd.DataFrame, templates: Sequence[str], analysis: Analysis = ANALYSIS) -> pd.DataFrame:
    """Vote accuracy with every template, and without each one in turn (``delta`` = all - without).

    The template with the smallest (most negative) delta adds least to the vote."""
    base = df[df["template"].isin(templates) & (df["sample"] == 0)]
    full = regex_vote(base, templates, analysis).groupby("notes_strategy", sort=False)["correct"].mean()
    rows = []
    for t in templates:
        rest = [x for x in templates if x != t]
        acc = regex_vote(base, rest, analysis).groupby("notes_strategy", sort=False)["correct"].mean()
        for strategy, a in acc.items():
            rows.append(
                {
                    "notes_strategy": strategy,
                    "left_out": t,
                    "vote_all": float(full[strategy]),
                    "vote_without": float(a),
                    "delta": float(full[strategy] - a),
                }
            )
    out = sort_rows(pd.DataFrame(rows), ["notes_strategy", "left_out"])
    out["adds_least"] = out.groupby("notes_strategy")["delta"].transform("min").eq(out["delta"])
    return out


def pairwise(df: pd.DataFrame, templates: Sequence[str], strategy: str, metric: str = "agreement") -> pd.DataFrame:
    """Template x template matrix of answer agreement (share of questions with the same label, unparsed
    counting as a label) or Cohen's kappa, for one strategy."""
    wide, _ = answer_matrix(df[(df["notes_strategy"] == strategy) & (df["sample"] == 0)], templates)
    labels = wide.fillna("unparsed").astype(str)
    m = pd.DataFrame(1.0, index=list(templates), columns=list(templates))
    for a, b in combinations(templates, 2):
        if metric == "kappa":
            v = cohen_kappa(labels[a], labels[b])
        else:
            v = float((labels[a] == labels[b]).mean())
        m.loc[a, b] = m.loc[b, a] = v
    return m
