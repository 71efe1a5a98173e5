"""Helpers of single ablation notebooks that are not a table of olakit.analysis on their own: the vote-type
tables with the LLM-vote audit and the note-strategy figures (accuracy by retrieval similarity is
olakit.notebook.records.similarity_table: it reads the run's notes library).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from olakit.analysis import figures
from olakit.analysis.inference import holm_matrix
from olakit.analysis.runs import llm_vote_audit
from olakit.analysis.tables import answer_counts, bounds_long, method_accuracy
from olakit.answering.vote import regex_vote
from olakit.names import LLM_VOTE, LLM_VOTE_SHUFFLED
from olakit.settings import ANALYSIS, Analysis


def vote_type_tables(
    records: pd.DataFrame, names: Sequence[str], analysis: Analysis = ANALYSIS
) -> dict[str, pd.DataFrame]:
    """Figs 7-8 / Table 8: the regex bounds, the regex vote and any LLM vote, with CIs (``vote_type``); and the
    LLM-vote audit over the questions that have an LLM vote (``llm_vote_audit``) when there is one."""
    base = records[records["template"].isin(names)]
    counts = answer_counts(base, names, analysis)
    vote = regex_vote(base, names, analysis)
    bounds = bounds_long(counts, vote, analysis)
    votes = method_accuracy(records, [], analysis)
    tables = {"vote_type": pd.concat([bounds, votes], ignore_index=True)}
    if {LLM_VOTE, LLM_VOTE_SHUFFLED} <= set(records["template"]):
        voted = set(records.loc[records["template"] == LLM_VOTE, "question_id"])
        tables["llm_vote_audit"] = llm_vote_audit(records[records["question_id"].isin(voted)], names, analysis)
    return tables


def note_strategy_figures(tests: pd.DataFrame, kappas: pd.DataFrame, cost: pd.DataFrame) -> dict:
    """The note-strategy figures: Holm matrix of the paired tests, Pareto plot, Cohen's kappa per strategy."""
    import matplotlib.pyplot as plt

    with figures.paper_style():
        fig_p, ax = plt.subplots(figsize=(7, 4.5))
        figures.pareto(cost, ax=ax)
        fig_m, ax = plt.subplots(figsize=(11, 9))
        n_q = int(tests["n"].max()) if len(tests) else 0
        figures.matrix(holm_matrix(tests), ax=ax, title=f"Holm-adjusted exact McNemar p between cells (n = {n_q})",
                       marked=figures.confirmatory(tests))  # fmt: skip
        groups = list(kappas.groupby("notes_strategy", sort=False))
        fig_k, axes = plt.subplots(1, max(1, len(groups)), figsize=(4.6 * max(1, len(groups)) + 0.8, 4.6))
        axes = np.atleast_1d(axes)
        for i, (ax, (strategy, g)) in enumerate(zip(axes, groups)):
            m = holm_matrix(g.rename(columns={"cohen_kappa": "v"}), value="v")
            last = i == len(groups) - 1  # one colour bar serves every panel: they share the scale
            figures.matrix(
                m, ax=ax, title=strategy, cmap="mako", vmin=-0.2, vmax=1, annot_size=10, square=True,
                cbar=last, cbar_kws={"label": "Cohen's kappa"} if last else None,
            )  # fmt: skip
            if i:
                ax.set_yticklabels([])
        fig_k.suptitle("Cohen's kappa between templates, per note strategy")
        fig_k.tight_layout()
    return {"table3_holm_matrix": fig_m, "pareto_cost_accuracy": fig_p, "template_kappa": fig_k}
