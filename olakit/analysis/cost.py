"""Cost against accuracy: tokens and cost per question of every cell, with its Pareto front (fewer tokens, higher
accuracy). Pure pandas/numpy; no LLM calls.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from olakit.analysis.inference import cell_outcomes
from olakit.names import REGEX_VOTE
from olakit.settings import ANALYSIS, Analysis


def cost_accuracy(
    df: pd.DataFrame,
    templates: Sequence[str],
    price: tuple[float, float] | None = None,
    analysis: Analysis = ANALYSIS,
) -> pd.DataFrame:
    """Per cell: accuracy, tokens per question and cost per question, and whether it is on the Pareto front.

    A vote costs the sum of its templates, SC the sum of its samples. Records without reported tokens (recorded
    runs) get an estimate of 4 characters per token for the prompt and the output (``tokens_source`` says which).
    ``price``: USD per million (prompt, completion) tokens; default: the records' own cost.
    """
    d = df.copy()
    reported = d["completion_tokens"].notna() & d["prompt_tokens"].notna()
    d["tok_in"] = d["prompt_tokens"].astype("Float64").fillna(d["prompt_chars"].astype("Float64") / 4).fillna(0)
    d["tok_out"] = d["completion_tokens"].astype("Float64").fillna(d["raw_output"].str.len() / 4)
    if price is not None:
        d["usd"] = (d["tok_in"] * price[0] + d["tok_out"] * price[1]) / 1e6
    else:
        d["usd"] = d["cost"].astype("Float64")
    d["tokens"] = d["tok_in"] + d["tok_out"]
    per_q = d.groupby(["template", "notes_strategy", "question_id"], sort=False)[["tokens", "usd"]].sum()
    acc = cell_outcomes(df, templates, analysis)
    rows = []
    for cell in acc.columns:
        method, strategy = cell.split(" | ")
        members = templates if method == REGEX_VOTE else [method]
        cost = per_q[
            per_q.index.get_level_values("template").isin(members)
            & (per_q.index.get_level_values("notes_strategy") == strategy)
        ]
        by_q = cost.groupby(level="question_id").sum()
        rows.append(
            {
                "method": method,
                "notes_strategy": strategy,
                "accuracy": float(acc[cell].mean()),
                "tokens_per_question": float(by_q["tokens"].mean()) if len(by_q) else np.nan,
                "usd_per_question": float(by_q["usd"].mean()) if len(by_q) and by_q["usd"].notna().any() else np.nan,
                "tokens_source": "reported" if reported.all() else "estimated (prompt and output chars / 4)",
            }
        )
    out = pd.DataFrame(rows)
    out["pareto"] = [
        not (
            (out["tokens_per_question"] <= t)
            & (out["accuracy"] >= a)
            & ((out["tokens_per_question"] < t) | (out["accuracy"] > a))
        ).any()
        for t, a in zip(out["tokens_per_question"], out["accuracy"])
    ]
    return out
