"""The tables of a live OlaGPT run (``run_tables``): the paper tables over its templates, every method with CIs,
the LLM-vote audit, usage, and what verification thinking and the controller's template choice change
(``verification_table``, ``choice_table``). Pure pandas over records; no LLM calls."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd

from olakit.analysis.inference import mcnemar_exact
from olakit.analysis.tables import (
    accuracy_long,
    accuracy_wide,
    compute_tables,
    method_accuracy,
    ordered_strategies,
    sort_rows,
    usage_table,
)
from olakit.answering.vote import regex_vote
from olakit.names import CHOSEN_VOTE, LLM_VOTE, LLM_VOTE_SHUFFLED, REGEX_VOTE, VERIFIED_SUFFIX, VERIFIED_VOTE, ZERO_SHOT
from olakit.settings import ANALYSIS, Analysis


def run_tables(
    df: pd.DataFrame,
    templates: Sequence[str],
    analysis: Analysis = ANALYSIS,
    vote: bool = True,
) -> dict[str, pd.DataFrame]:
    """The foundation tables over the templates (voted in the order given), plus every method's accuracy
    (templates, regex vote, LLM vote, SC, Auto-CoT) with CIs, the LLM-vote audit and usage per method. Without
    ``vote`` (a run with template choice alone), or where the templates did not all answer every question, there is
    no vote over them and no table built on one: each template is counted on the questions it answered."""
    have = set(df["template"].unique())
    present = [t for t in templates if t in have]
    base = df[df["template"].isin(present) & (df["sample"] == 0)]
    voted = vote and answer_every_cell(base, present)
    tables = compute_tables(label_note_counts(base), present, analysis) if present and voted else {}
    tables["methods"] = method_accuracy(label_note_counts(df), present, analysis, vote=voted)
    tables["methods_wide"] = accuracy_wide(tables["methods"])
    verified = [f"{t}{VERIFIED_SUFFIX}" for t in present if f"{t}{VERIFIED_SUFFIX}" in have]
    if verified:
        vlong = accuracy_long(label_note_counts(df[df["template"].isin(verified)]), verified, analysis, voted)
        vlong["method"] = vlong["method"].replace({REGEX_VOTE: VERIFIED_VOTE})
        tables["methods"] = sort_rows(
            pd.concat([tables["methods"], vlong], ignore_index=True), ["method", "notes_strategy"]
        )
        if voted:  # the vote before and after verification: over templates that answered every question
            tables["verification"] = verification_table(label_note_counts(df), present, analysis)
    if CHOSEN_VOTE in have:
        tables["template_choice"] = choice_table(label_note_counts(df), present, analysis)
    if {LLM_VOTE, LLM_VOTE_SHUFFLED} <= have:
        tables["llm_vote_audit"] = llm_vote_audit(label_note_counts(df), present, analysis)
    tables["usage"] = usage_table(df)
    return tables


def answer_every_cell(records: pd.DataFrame, templates: Sequence[str]) -> bool:
    """Whether every template answers every question of every cell (dataset, note strategy and count): what a
    vote over them, and the tables built on one, need. A run with template choice alone (``choose_k`` without
    ``choice_comparison``) has each question answered by its chosen templates only: no vote over all of them
    exists, the chosen vote is its vote.

    >>> import pandas as pd
    >>> r = pd.DataFrame({"dataset": "d", "notes_strategy": "zero-shot", "n_notes": 0, "question_id": ["1", "1", "2"],
    ...                   "template": ["A", "B", "A"]})
    >>> answer_every_cell(r, ["A", "B"]), answer_every_cell(r, ["A"])
    (False, True)
    """
    sub = records[records["template"].isin(templates)]
    per = sub.groupby(["dataset", "notes_strategy", "n_notes", "question_id"], sort=False)["template"].nunique()
    return bool(len(per)) and bool((per == len(templates)).all())


def llm_vote_audit(records: pd.DataFrame, templates: Sequence[str], analysis: Analysis = ANALYSIS) -> pd.DataFrame:
    """Per note strategy: LLM vote vs regex vote, and the vote in template order vs shuffled order.

    Records must hold templates, ``llm_vote`` and ``llm_vote_shuffled`` rows. Columns: n, llm_correct,
    regex_correct, overrides_correct_majority (regex vote right, LLM vote wrong), rescues (regex wrong, LLM
    right), order_changes (the LLM vote differs when the candidates are shuffled), position_bias_rate (order changes
    over the questions that have both votes; a question without a shuffled vote is none of them).
    """
    votes = regex_vote(records, templates, analysis)
    key = ["dataset", "notes_strategy", "n_notes", "question_id"]
    llm = records[records["template"] == LLM_VOTE].set_index(key)
    shuf = records[records["template"] == LLM_VOTE_SHUFFLED].set_index(key)
    v = votes.set_index(key)
    both = v.join(
        llm[["extracted", "correct"]].rename(columns={"extracted": "llm", "correct": "llm_correct"}), how="inner"
    )
    both = both.join(shuf[["extracted"]].rename(columns={"extracted": "shuffled"}), how="left")
    rows = []
    for strategy, g in both.groupby(level="notes_strategy", sort=False):
        changed = (g["llm"].fillna("-") != g["shuffled"].fillna("-")) & g["shuffled"].notna()
        asked = int(g["shuffled"].notna().sum())  # the questions with both votes
        rows.append(
            {
                "notes_strategy": strategy,
                "n": len(g),
                "llm_correct": int(g["llm_correct"].sum()),
                "regex_correct": int(g["correct"].sum()),
                "overrides_correct_majority": int((g["correct"] & ~g["llm_correct"]).sum()),
                "rescues": int((~g["correct"] & g["llm_correct"]).sum()),
                "order_changes": int(changed.sum()),
                "position_bias_rate": float(changed.sum() / asked) if asked else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def replicate_line(table: pd.DataFrame) -> str:
    """The replicate in one line, as the terminal shows it after a run."""
    asked, n = int(table["asked"].sum()), int(table["n"].sum())
    differ, changed = int(table["answers_differ"].sum()), int(table["correct_changed"].sum())
    if not n:
        return f"replicate: {asked} answers asked twice, none parsed either time"
    worst = table.sort_values("share_differ", ascending=False).iloc[0]
    return (f"replicate: {asked} answers asked twice; of the {n} parsed at least once, {differ} differed "
            f"({differ / n:.0%}; {changed} changed between right and wrong); most in {worst['template']} | "
            f"{worst['notes_strategy']}: {int(worst['answers_differ'])} of {int(worst['n'])}")  # fmt: skip


def label_note_counts(df: pd.DataFrame) -> pd.DataFrame:
    """With several note counts, name strategies "retrieval n=3" so tables keep them apart."""
    if df.loc[df["notes_strategy"] != ZERO_SHOT, "n_notes"].nunique() <= 1:
        return df
    out = df.copy()
    mask = out["notes_strategy"] != ZERO_SHOT
    out.loc[mask, "notes_strategy"] = out.loc[mask, "notes_strategy"] + " n=" + out.loc[mask, "n_notes"].astype(str)
    return out


def _cells(frame: pd.DataFrame):
    """The (notes_strategy, n_notes) cells of a frame, strategies in the kit's order, counts ascending."""
    for strategy in ordered_strategies(frame["notes_strategy"]):
        for n in sorted(frame.loc[frame["notes_strategy"] == strategy, "n_notes"].unique()):
            yield strategy, n


def _in(frame: pd.DataFrame, strategy: str, n) -> pd.DataFrame:
    return frame[(frame["notes_strategy"] == strategy) & (frame["n_notes"] == n)]


def verification_table(df: pd.DataFrame, templates: Sequence[str], analysis: Analysis = ANALYSIS) -> pd.DataFrame:
    """Per strategy and notes count: the regex vote before and after verification thinking (the ``<template>+V``
    answers), the answers it revised and changed, and the questions whose vote it turned right or wrong (exact
    McNemar p)."""
    from_v = [f"{t}{VERIFIED_SUFFIX}" for t in templates]
    before = regex_vote(df[df["template"].isin(templates)], templates, analysis)
    after = regex_vote(df[df["template"].isin(from_v)], from_v, analysis)
    rows = []
    for strategy, n in _cells(before):
        b = _in(before, strategy, n).set_index("question_id")["correct"]
        a = _in(after, strategy, n).set_index("question_id")["correct"].loc[b.index]
        v = _in(df[df["template"].isin(from_v)], strategy, n)
        orig = _in(df[df["template"].isin(templates)], strategy, n)
        changed = (
            v.set_index(["question_id", "template"])["extracted"].fillna("-").to_numpy()
            != orig.assign(template=orig["template"] + VERIFIED_SUFFIX)
            .set_index(["question_id", "template"])
            .loc[v.set_index(["question_id", "template"]).index, "extracted"]
            .fillna("-")
            .to_numpy()
        )
        revised = sum(json.loads(t).get("revised", False) for t in v["trace"] if t)
        to_wrong, to_right, p = mcnemar_exact(b.to_numpy(), a.to_numpy())
        rows.append(
            {
                "notes_strategy": strategy,
                "n_notes": int(n),
                "n": len(b),
                "vote_before": float(b.mean()),
                "vote_after": float(a.mean()),
                "answers_revised": int(revised),
                "answers_changed": int(changed.sum()),
                "vote_right_to_wrong": to_wrong,
                "vote_wrong_to_right": to_right,
                "p_mcnemar": p,
            }
        )
    return pd.DataFrame(rows)


def _tokens(frame: pd.DataFrame) -> pd.Series:
    """Prompt plus completion tokens of each record (none reported: 0)."""
    return frame["prompt_tokens"].astype("Float64").fillna(0) + frame["completion_tokens"].astype("Float64").fillna(0)


def choice_table(df: pd.DataFrame, templates: Sequence[str], analysis: Analysis = ANALYSIS) -> pd.DataFrame:
    """Per strategy and notes count, what template choice cost as the records show it, and what it gave: per
    question, the calls the chosen way made (the choice and its k answers), the share of them paid (the rest came
    from the cache) and their tokens; the chosen vote's accuracy. Where the full grid ran as well
    (``choice_comparison``), the vote over every template and its calls and tokens beside it (``full_grid``);
    otherwise those columns are empty: nothing was run to compare with."""
    chosen = df[df["template"] == CHOSEN_VOTE]
    base = df[df["template"].isin(templates) & (df["sample"] == 0)]
    tokens = _tokens(base)
    keys = list(zip(base["question_id"], base["notes_strategy"], base["n_notes"], base["template"]))
    tok, paid = dict(zip(keys, tokens)), dict(zip(keys, ~base["cached"].astype(bool)))
    rows = []
    for strategy, n in _cells(chosen):
        c = _in(chosen, strategy, n)
        cell = _in(base, strategy, n)
        traces = [json.loads(t) for t in c["trace"]]
        picks = [t["chosen"] for t in traces]
        candidates = traces[0].get("candidates", list(templates)) if traces else list(templates)
        made = [
            [(q, strategy, n, t) for t in pick if (q, strategy, n, t) in tok]
            for q, pick in zip(c["question_id"], picks)
        ]
        own = _tokens(c).tolist()
        calls = [1 + len(m) for m in made]
        paid_calls = [int(not cached) + sum(paid[k] for k in m) for m, cached in zip(made, c["cached"])]
        answered = cell[cell["template"].isin(candidates)].groupby("question_id")["template"].nunique()
        full = bool(answered.reindex(c["question_id"]).eq(len(candidates)).all())
        row = {
            "notes_strategy": strategy,
            "n_notes": int(n),
            "n": len(c),
            "k": len(picks[0]) if picks else 0,
            "chosen_vote": float(c["correct"].mean()),
            "calls_chosen": float(pd.Series(calls).mean()),
            "paid_share_chosen": float(sum(paid_calls) / sum(calls)) if calls else float("nan"),
            "tokens_chosen": float(pd.Series([sum(tok[k] for k in m) + o for m, o in zip(made, own)]).mean()),
            "full_grid": full,
            "all_templates_vote": float("nan"),
            "calls_all": float("nan"),
            "tokens_all": float("nan"),
        }
        if full:
            allv = _in(regex_vote(cell, candidates, analysis), strategy, n)
            row["all_templates_vote"] = float(allv["correct"].mean())
            row["calls_all"] = float(len(candidates))
            grid = [sum(tok[(q, strategy, n, t)] for t in candidates) for q in c["question_id"]]
            row["tokens_all"] = float(pd.Series(grid).mean())
        rows.append(row)
    return pd.DataFrame(rows)
