"""The regex vote: combine the extracted answers of several templates for one question into one answer (pure; no
LLM calls). OlaGPT's "vote by regex": count the extracted labels, the most frequent wins. How ties and unparsed
answers are treated, and in which template order, is one VoteRule (olakit.olagpt.config), whose default is what the
authors' code does:

- ``tie="first"``: the tied label given first in vote order. With the order DT, DST, PT, ST, turbo (``vote_order=
  "paper"``) this is the authors' ``max(votes, key=votes.get)`` over a dict filled in the order of their recorded
  candidate outputs; ``random``: a seeded choice among the tied labels; ``none``: no answer, counted wrong.
- ``unparsed="raw"``: an unparsed answer votes as its raw text (the authors); ``abstain``: it is left out.

``majority(["A", "B", "A"]) -> "A"``; ``majority(["B", "A", None]) -> "B"`` (tie, first rule);
``majority(["B", "A"], tie="none") -> None``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from olakit.errors import DataError
from olakit.majority import majority
from olakit.olagpt.config import ANALYSIS, PAPER, Analysis, VoteRule
from olakit.rng import keyed_rng

RAW = "\x00raw:"
"""Prefix of a raw-output label in ``unparsed="raw"`` votes (never an option label)."""


GROUP = ["dataset", "notes_strategy", "n_notes", "sample", "question_id"]
"""A vote combines the templates' records that share these columns."""


def answer_matrix(df: pd.DataFrame, templates: Sequence[str] | None = None) -> tuple[pd.DataFrame, pd.Series]:
    """Wide view: one row per GROUP key, one column per template (extracted labels), and the gold labels.

    Raises DataError if a template is missing for some question (votes over unequal sets mislead).
    """
    templates = list(templates) if templates is not None else list(dict.fromkeys(df["template"]))
    missing = sorted(set(templates) - set(df["template"]))
    if missing:
        raise DataError(f"templates {missing} have no records; present: {sorted(set(df['template']))}")
    sub = df[df["template"].isin(templates)]
    wide = sub.pivot(index=GROUP, columns="template", values="extracted")[templates]
    gold = sub.groupby(GROUP)["gold"].first()
    counts = sub.groupby(GROUP)["template"].nunique()
    if (counts < len(templates)).any():
        bad = counts[counts < len(templates)].index[0]
        raise DataError(f"question {dict(zip(GROUP, bad))} lacks records for some of the templates {templates}")
    wide = wide.astype(object).where(wide.notna(), None)
    return wide, gold.loc[wide.index]


def vote_labels(
    df: pd.DataFrame, templates: Sequence[str] | None = None, rule: VoteRule = PAPER
) -> tuple[pd.DataFrame, pd.Series]:
    """answer_matrix over the templates in the rule's vote order, with each unparsed answer as None (``abstain``) or
    as a label of its own made of its raw output (``raw``: two identical unparseable outputs vote together, as in
    the authors' code)."""
    templates = list(templates) if templates is not None else list(dict.fromkeys(df["template"]))
    wide, gold = answer_matrix(df, rule.order(templates))
    if rule.unparsed == "raw" and wide.isna().to_numpy().any():
        sub = df[df["template"].isin(wide.columns)]
        raw = sub.pivot(index=GROUP, columns="template", values="raw_output")[list(wide.columns)].loc[wide.index]
        wide = wide.where(wide.notna(), RAW + raw.astype(str))
    return wide, gold


def regex_vote(
    df: pd.DataFrame,
    templates: Sequence[str] | None = None,
    analysis: Analysis = ANALYSIS,
) -> pd.DataFrame:
    """Regex majority vote over ``templates`` for every question and condition, under ``rule`` (its vote order,
    tie rule and unparsed rule; ``analysis.analysis_seed`` for the random tie rule).

    Returns one row per GROUP key with columns ``voted`` (None when nothing parsed won), ``gold``, ``correct``.
    """
    return vote_wide(*vote_labels(df, templates, analysis), analysis)


def vote_wide(wide: pd.DataFrame, gold: pd.Series, analysis: Analysis = ANALYSIS) -> pd.DataFrame:
    """regex_vote over the columns of a vote_labels matrix, in their order (so that many subsets of templates share
    one matrix)."""
    tie = analysis.tie
    voted = [
        majority(list(row), tie, keyed_rng(analysis.analysis_seed, *key) if tie == "random" else None)
        for key, row in zip(wide.index, wide.itertuples(index=False, name=None))
    ]
    voted = [None if isinstance(v, str) and v.startswith(RAW) else v for v in voted]
    out = pd.DataFrame(
        {"voted": pd.Series(voted, index=wide.index, dtype=object), "gold": gold.values}, index=wide.index
    )
    out["correct"] = out["voted"].eq(out["gold"]) & out["voted"].notna()
    return out.reset_index()
