"""The regex vote: combine the extracted answers of several templates for one question into one answer (pure; no
LLM calls). OlaGPT's "vote by regex": count the extracted labels, the most frequent wins. An unparsed answer
abstains or votes as its raw text (``unparsed``, UNPARSED_RULES).

Ties are resolved by an explicit rule (``TIE_RULES``):

- ``"first"``: the tied label given first in template order. With the templates in the order DT, DST, PT, ST,
  turbo this is what OlaGPT's code does (``max(votes, key=votes.get)`` over a dict filled in the order of the
  recorded candidate outputs: dt, dst, pt, st, turbo).
- ``"random"``: a seeded random choice among the tied labels (seed and question decide it).
- ``"none"``: no answer, which counts as wrong; the strictest reading of "majority".

``majority(["A", "B", "A"]) -> "A"``; ``majority(["B", "A", None]) -> "B"`` (tie, first rule);
``majority(["B", "A"], tie="none") -> None``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from olakit.errors import DataError, lookup
from olakit.majority import check_tie_rule, majority
from olakit.rng import keyed_rng

UNPARSED_RULES = ("abstain", "raw")
"""What an answer the extractor could not parse does in a vote: ``abstain`` (olakit's choice: it is left out) or
``raw`` (the OlaGPT authors' code: the raw output is kept and votes as a label of its own, never a right one)."""
RAW = "\x00raw:"
"""Prefix of a raw-output label in ``unparsed="raw"`` votes (never an option label)."""


def check_unparsed_rule(unparsed: str) -> str:
    """Return ``unparsed`` if it is a known rule for unparsed answers, else UnknownNameError."""
    return lookup({u: u for u in UNPARSED_RULES}, unparsed, "unparsed rule")


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
    df: pd.DataFrame, templates: Sequence[str] | None = None, unparsed: str = "abstain"
) -> tuple[pd.DataFrame, pd.Series]:
    """answer_matrix, with each unparsed answer as None (``abstain``) or as a label of its own made of its raw
    output (``raw``: two identical unparseable outputs vote together, as in the authors' code)."""
    check_unparsed_rule(unparsed)
    wide, gold = answer_matrix(df, templates)
    if unparsed == "raw":
        sub = df[df["template"].isin(wide.columns)]
        raw = sub.pivot(index=GROUP, columns="template", values="raw_output")[list(wide.columns)].loc[wide.index]
        wide = wide.where(wide.notna(), RAW + raw.astype(str))
    return wide, gold


def regex_vote(
    df: pd.DataFrame,
    templates: Sequence[str] | None = None,
    tie: str = "first",
    seed: int = 0,
    unparsed: str = "abstain",
) -> pd.DataFrame:
    """Regex majority vote over ``templates`` for every question and condition; a tie goes by ``tie`` (``first``:
    the label given first in the order of ``templates``), an unparsed answer by ``unparsed``.

    Returns one row per GROUP key with columns ``voted`` (None when nothing parsed won), ``gold``, ``correct``.
    """
    check_tie_rule(tie)
    return vote_wide(*vote_labels(df, templates, unparsed), tie=tie, seed=seed)


def vote_wide(wide: pd.DataFrame, gold: pd.Series, tie: str = "first", seed: int = 0) -> pd.DataFrame:
    """regex_vote over the columns of a vote_labels matrix (so that many subsets of templates share one matrix)."""
    check_tie_rule(tie)
    voted = [
        majority(list(row), tie, keyed_rng(seed, *key) if tie == "random" else None)
        for key, row in zip(wide.index, wide.itertuples(index=False, name=None))
    ]
    voted = [None if isinstance(v, str) and v.startswith(RAW) else v for v in voted]
    out = pd.DataFrame(
        {"voted": pd.Series(voted, index=wide.index, dtype=object), "gold": gold.values}, index=wide.index
    )
    out["correct"] = out["voted"].eq(out["gold"]) & out["voted"].notna()
    return out.reset_index()
