"""Agreement between templates: Cohen's kappa per pair (scikit-learn) and Fleiss' kappa per strategy
(statsmodels) of the extracted answers (unparsed counts as its own category), the error-overlap matrix (questions
both got wrong), the pairwise matrix the heatmap explorer shows, and ``leave_one_out`` (the vote without each
template: the one whose removal costs least adds least). Pure pandas/numpy; no LLM calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from olakit.analysis.tables import ordered_strategies, sort_rows
from olakit.olagpt.vote import answer_matrix, regex_vote


def cohen_kappa(a, b) -> float:
    """Cohen's kappa of two raters' labels; NaN when both give one label throughout (kappa is then 0/0).

    >>> cohen_kappa(["A", "A", "B", "B"], ["A", "B", "B", "B"])
    0.5
    """
    from sklearn.metrics import cohen_kappa_score

    a, b = pd.Series(list(a)), pd.Series(list(b))
    if a.nunique() <= 1 and b.nunique() <= 1:
        return float("nan")
    return float(cohen_kappa_score(a, b))


def agreement(df: pd.DataFrame, templates: Sequence[str]) -> dict[str, pd.DataFrame]:
    """Per strategy: pairwise Cohen's kappa, Fleiss' kappa, and the error-overlap matrix (both wrong)."""
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    base = df[df["template"].isin(templates) & (df["sample"] == 0)]
    kappas, fleiss, overlap = [], [], []
    for strategy in ordered_strategies(base["notes_strategy"]):
        wide, gold = answer_matrix(base[base["notes_strategy"] == strategy], templates)
        labels = wide.fillna("unparsed").astype(str)
        wrong = labels.ne(gold.values, axis=0) | wide.isna()
        for a, b in combinations(templates, 2):
            k = cohen_kappa(labels[a], labels[b])
            both = int((wrong[a] & wrong[b]).sum())
            either = int((wrong[a] | wrong[b]).sum())
            kappas.append(
                {
                    "notes_strategy": strategy,
                    "a": a,
                    "b": b,
                    "cohen_kappa": float(k),
                    "agreement": float((labels[a] == labels[b]).mean()),
                }
            )
            overlap.append(
                {
                    "notes_strategy": strategy,
                    "a": a,
                    "b": b,
                    "both_wrong": both,
                    "jaccard_wrong": both / either if either else np.nan,
                }
            )
        counts, _ = aggregate_raters(labels.to_numpy())
        fleiss.append(
            {
                "notes_strategy": strategy,
                "n": len(labels),
                "raters": len(templates),
                "fleiss_kappa": float(fleiss_kappa(counts, method="fleiss")),
            }
        )
    return {
        "cohen_kappa": pd.DataFrame(kappas),
        "fleiss_kappa": pd.DataFrame(fleiss),
        "error_overlap": pd.DataFrame(overlap),
    }


def leave_one_out(
    df: pd.DataFrame, templates: Sequence[str], tie: str = "first", seed: int = 0, unparsed: str = "abstain"
) -> pd.DataFrame:
    """Vote accuracy with every template, and without each one in turn (``delta`` = all - without).

    The template with the smallest (most negative) delta adds least to the vote."""
    base = df[df["template"].isin(templates) & (df["sample"] == 0)]
    full = (
        regex_vote(base, templates, tie=tie, seed=seed, unparsed=unparsed)
        .groupby("notes_strategy", sort=False)["correct"]
        .mean()
    )
    rows = []
    for t in templates:
        rest = [x for x in templates if x != t]
        acc = (
            regex_vote(base, rest, tie=tie, seed=seed, unparsed=unparsed)
            .groupby("notes_strategy", sort=False)["correct"]
            .mean()
        )
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
