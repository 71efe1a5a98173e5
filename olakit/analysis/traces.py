"""Views over the traces of multi-step methods (GEEK): how often each action ran, steps and sub-questions per
question, fallbacks and forced final answers, per row. Pure pandas over the records' ``trace`` column."""

from __future__ import annotations

import json

import pandas as pd

from olakit.analysis.inference import paired_tests
from olakit.analysis.intervals import accuracy_row, verdict_shares
from olakit.config import STATS, Stats
from olakit.names import setting_label


def _branches(df: pd.DataFrame):
    """(row, question id, branch, the record's position) for every branch of every record's trace."""
    for record, (row, qid, text) in enumerate(zip(df["row"], df["question_id"], df["trace"])):
        if text:
            for b in json.loads(text)["branches"]:
                yield row, qid, b, record


def action_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Per row: how many times each action ran (selections excluded), and how many selections fell back. Branches
    that split from one another carry the steps before the split, each step still marked with the branch that ran
    it: such a step ran once, and counts once (it once counted once per branch: row Full at depth 2 with 2 branches,
    3 questions, scripted, counted 12 retrievals where 6 ran). A decomposition sampled for n branches counts n, one
    per sub-question written (one call: cost_per_row counts its prompt once)."""
    ran = {
        (record, s.get("branch"), i): (row, s) for row, _, b, record in _branches(df) for i, s in enumerate(b["steps"])
    }
    rows = []
    for row, s in ran.values():  # one per step run
        if s["action"] != "select":
            rows.append({"method": row, "action": s["action"]})
        elif s.get("fallback"):
            rows.append({"method": row, "action": "fallback"})
    if not rows:
        return pd.DataFrame(columns=["method", "action", "count"])
    return pd.DataFrame(rows).value_counts(["method", "action"], sort=False).rename("count").reset_index()


def steps_per_question(df: pd.DataFrame) -> pd.DataFrame:
    """Per row: mean and max executed actions and sub-questions per branch, branches per question, the share of
    branches whose final answer the budget forced, and the questions whose branches tied (``ties``; the config's
    ``tie`` rule decided them)."""
    ties = {
        (row, qid): bool(json.loads(text).get("tie"))
        for row, qid, text in zip(df["row"], df["question_id"], df["trace"])
        if text
    }
    rows = []
    for row, qid, b, _ in _branches(df):
        executed = [s for s in b["steps"] if s["action"] not in ("select",)]
        rows.append(
            {
                "method": row,
                "question_id": qid,
                "actions": len(executed),
                "sub_questions": b["state"].count("\nSub-question ") + ("Current sub-question" in b["state"]),
                "forced": bool(b["forced_final"]),
                "tie": ties[(row, qid)],
            }
        )
    if not rows:
        return pd.DataFrame(
            columns=[
                "method",
                "branches_per_question",
                "mean_actions",
                "max_actions",
                "mean_sub_questions",
                "forced_share",
                "ties",
            ]
        )
    d = pd.DataFrame(rows)
    g = d.groupby("method", sort=False)
    return pd.DataFrame(
        {
            "branches_per_question": g.size() / g["question_id"].nunique(),
            "mean_actions": g["actions"].mean(),
            "max_actions": g["actions"].max(),
            "mean_sub_questions": g["sub_questions"].mean(),
            "forced_share": g["forced"].mean(),
            "ties": d.drop_duplicates(["method", "question_id"]).groupby("method", sort=False)["tie"].sum(),
        }
    ).reset_index()


def cost_per_row(df: pd.DataFrame) -> pd.DataFrame:
    """Per row: accuracy, LLM calls per question (distinct prompts in its traces, or 1 for a direct answer) and
    tokens per question (the records' reported tokens)."""
    rows = []
    for method, g in df.groupby("row", sort=False):
        calls = []
        for text in g["trace"]:
            prompts = (
                {(s["prompt_hash"], s.get("branch", "")) for b in json.loads(text)["branches"] for s in b["steps"]}
                if text
                else set()
            )
            calls.append(len({p for p, _ in prompts}) or 1)
        tokens = (g["prompt_tokens"].astype("Float64") + g["completion_tokens"].astype("Float64")).mean()
        rows.append(
            {
                "method": method,
                "accuracy": float(g["correct"].mean()),
                "calls_per_question": float(sum(calls) / len(calls)),
                "tokens_per_question": float(tokens) if pd.notna(tokens) else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def geek_tables(df: pd.DataFrame, analysis: Stats = STATS) -> dict[str, pd.DataFrame]:
    """GEEK's Table 2 (every row with CIs), paired tests between rows (exact McNemar and paired bootstrap, Holm),
    accuracy against calls and tokens, action frequencies and steps per question."""
    rows = [
        accuracy_row(m, s, g["correct"].to_numpy(), analysis) for (m, s), g in df.groupby(["row", "corpus"], sort=False)
    ]
    table2 = pd.DataFrame(rows).rename(columns={"notes_strategy": "corpus"})
    table2["corpus"] = table2["corpus"].map(setting_label)
    outcomes = df.pivot_table(index="question_id", columns="row", values="correct", aggfunc="first", sort=False)
    tests = paired_tests(outcomes.astype(float), analysis=analysis) if outcomes.shape[1] > 1 else pd.DataFrame()
    return {
        "table2": table2,
        "paired_tests": tests,
        "cost": cost_per_row(df),
        "actions": action_counts(df),
        "steps": steps_per_question(df),
    }


def judge_table(judgements, row: str, stats: Stats = STATS) -> dict:
    """The seed's Table 3 from the judge's verdicts on one row (olakit.geek.assessment.assess): the shares Human /
    Equal / GEEK with their intervals, the unclear share and the judge's position bias."""
    out = verdict_shares(judgements, labels=("human", "geek"), stats=stats)
    out["equal"], out["equal_ci"] = out.pop("tie"), out.pop("tie_ci")
    return {**out, "row": row}
