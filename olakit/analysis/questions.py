"""Per-question views (what the question explorer reads; it votes nothing itself): the per-question tables of
answer counts and the regex vote, question filters, the one-line agreement summary, and Fig 12's grid of templates
correct against the largest wrong group.
"""

from __future__ import annotations

import pandas as pd

from olakit.analysis.tables import answer_counts
from olakit.answering.vote import regex_vote
from olakit.errors import lookup
from olakit.settings import ANALYSIS, Analysis

FILTERS = {
    "all": "every question",
    "split": "templates disagree",
    "vote_wrong_some_right": "vote wrong but some template right",
    "unparsed": "some answer unparsed",
}


def question_tables(records: pd.DataFrame, templates, rule: Analysis = ANALYSIS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(answer counts, regex vote) over the templates' first samples: one row per question and condition, the two
    tables in the same order (olakit.analysis.tables.answer_counts, olakit.answering.vote.regex_vote). For a subset of
    the records (e.g. one question after a correction) the rows are that subset's."""
    base = records[records["template"].isin(templates) & (records["sample"] == 0)]
    return answer_counts(base, templates, rule), regex_vote(base, templates, rule)


def filter_questions(counts: pd.DataFrame, vote: pd.DataFrame, kind: str) -> pd.Series:
    """Boolean mask over answer_counts rows for a FILTERS name (vote: regex_vote rows in the same order)."""
    lookup(FILTERS, kind, "question filter")
    if kind == "all":
        return pd.Series(True, index=counts.index)
    if kind == "split":
        return counts["n_plurality"] < counts["n_templates"] - counts["n_unparsed"]
    if kind == "unparsed":
        return counts["n_unparsed"] > 0
    return (~vote["correct"].to_numpy()) & (counts["n_correct"] > 0)


def agreement_summary(answers: dict, gold: str) -> str:
    """One line: ``"2 of 4 templates say B (wrong; gold A); 1 correct; 1 unparsed"`` (it once said the line had
    no count of the templates right)."""
    labels = [a for a in answers.values() if a is not None]
    if not labels:
        return f"no template gave a parseable answer (gold {gold})"
    counts = pd.Series(labels).value_counts()
    top, n = counts.index[0], int(counts.iloc[0])
    verdict = "correct" if top == gold else f"wrong; gold {gold}"
    extra = len(answers) - len(labels)
    return f"{n} of {len(answers)} templates say {top} ({verdict}); {sum(a == gold for a in labels)} correct" + (
        f"; {extra} unparsed" if extra else ""
    )


def fig12_grid(counts: pd.DataFrame, strategy: str) -> pd.DataFrame:
    """Fig 12's grid: questions counted by (largest wrong group, templates correct) for one strategy (rows w,
    columns a), from answer_counts output."""
    s = counts[counts["notes_strategy"] == strategy]
    n = int(counts["n_templates"].max())
    return pd.crosstab(s["n_wrong_top"], s["n_correct"]).reindex(index=range(n + 1), columns=range(n + 1), fill_value=0)
