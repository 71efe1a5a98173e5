"""The review loop measured, not assumed: accuracy after each iteration with CIs, the answers each iteration turns
right-to-wrong and wrong-to-right with an exact McNemar test (Holm over the iterations), each iteration's answer
length and review score, and the cost of each stage
(calls, tokens, seconds per question) from the histories. Pure pandas over records; no LLM calls."""

from __future__ import annotations

import json
import re

import pandas as pd

from olakit.analysis.inference import holm, mcnemar_exact
from olakit.analysis.intervals import accuracy_row
from olakit.config import STATS, Stats

DIRECT = "direct"


def iteration_accuracy(df: pd.DataFrame, analysis: Stats = STATS) -> pd.DataFrame:
    """Accuracy with CI of the direct answer and of each loop's answer after every iteration (rows method, i.e.
    the loop, iteration, n, correct, accuracy, ci_low, ci_high, unparsed)."""
    rows = []
    loops = [DIRECT, *[x for x in dict.fromkeys(df["loop"].unique()) if x != DIRECT]]
    for loop in loops:
        for it, g in df[df["loop"] == loop].groupby("iteration", sort=True):
            row = accuracy_row(loop, "", g["correct"].to_numpy(), analysis)
            del row["notes_strategy"]
            rows.append({**row, "iteration": int(it), "unparsed": int(g["extracted"].isna().sum())})
    return pd.DataFrame(rows)


def flips(df: pd.DataFrame) -> pd.DataFrame:
    """Per loop and iteration i >= 1: answers right at i-1 and wrong at i (right_to_wrong), the reverse
    (wrong_to_right), the exact McNemar p of the change, Holm-adjusted over the iterations of the loop."""
    rows = []
    for loop in [x for x in dict.fromkeys(df["loop"].unique()) if x != DIRECT]:
        wide = df[df["loop"] == loop].pivot_table(
            index="question_id", columns="iteration", values="correct", aggfunc="first"
        )
        its = sorted(wide.columns)
        part = []
        for before, after in zip(its, its[1:]):
            a, b = wide[before].astype(bool).to_numpy(), wide[after].astype(bool).to_numpy()
            right_to_wrong, wrong_to_right, p = mcnemar_exact(a, b)
            part.append(
                {
                    "loop": loop,
                    "iteration": int(after),
                    "n": len(a),
                    "right_to_wrong": right_to_wrong,
                    "wrong_to_right": wrong_to_right,
                    "net": wrong_to_right - right_to_wrong,
                    "p_mcnemar": p,
                }
            )
        if part:
            for row, adjusted in zip(part, holm([r["p_mcnemar"] for r in part])):
                row["p_mcnemar_holm"] = float(adjusted)
            rows += part
    return pd.DataFrame(rows)


def answer_trend(df: pd.DataFrame) -> pd.DataFrame:
    """Per loop and iteration (0: the first answer): the answers' mean length in characters and words, and the
    reviews of that iteration (iteration i: the review that led to answer i): how many there were (a question that
    stopped earlier has none; its answer is carried forward), how many were unparseable, and their mean overall
    score. The seed's claim that more than 2-3 iterations make answers worse by verbosity is length against score
    here and against accuracy in iteration_accuracy."""
    columns = ["loop", "iteration", "n", "mean_chars", "mean_words", "reviews", "unparseable", "mean_score"]
    loops = df[df["loop"] != DIRECT]  # none: the table has its columns and no row
    scores: dict[tuple[str, int], list] = {}
    for loop, text in zip(loops["loop"], loops["trace"]):
        for r in json.loads(text)["reviews"] if text else ():
            scores.setdefault((loop, int(r["iteration"])), []).append(r["scores"]["overall"])
    rows = []
    for (loop, it), g in loops.groupby(["loop", "iteration"], sort=False):
        answers = g["raw_output"].fillna("").astype(str)
        given = scores.get((loop, int(it)), [])
        read = [s for s in given if s is not None]
        rows.append({"loop": loop, "iteration": int(it), "n": len(g), "mean_chars": answers.str.len().mean(),
                     "mean_words": answers.str.split().str.len().mean(), "reviews": len(given),
                     "unparseable": len(given) - len(read),
                     "mean_score": sum(read) / len(read) if read else float("nan")})  # fmt: skip
    return pd.DataFrame(rows, columns=columns).sort_values(["loop", "iteration"], kind="stable", ignore_index=True)


def stage_cost(df: pd.DataFrame) -> pd.DataFrame:
    """Per loop and stage (the iteration dropped: "review 2" counts as "review"): calls, tokens and seconds (the sum
    of the calls' latencies) per question, from the histories in the records' traces, and ``cut_off``: how many of
    the stage's calls stopped at their token limit (a review cut off may have lost its score lines)."""
    rows = []
    for loop, text in zip(df["loop"], df["trace"]):
        if not text or loop == DIRECT:
            continue
        for s in json.loads(text)["stages"]:
            if "stage" not in s or "input" not in s:
                continue
            rows.append(
                {
                    "loop": loop,
                    "stage": re.sub(r"\s+\d+$", "", s["stage"]),
                    "calls": 1,
                    "tokens": (s.get("prompt_tokens") or 0) + (s.get("completion_tokens") or 0),
                    "seconds": s.get("latency") or 0.0,
                    "cut_off": int(bool(s.get("cut_off"))),
                }
            )
    if not rows:
        return pd.DataFrame(
            columns=["loop", "stage", "calls_per_question", "tokens_per_question", "seconds_per_question", "cut_off"]
        )
    d = pd.DataFrame(rows)
    n = df[df["trace"] != ""].groupby("loop")["question_id"].nunique()
    g = d.groupby(["loop", "stage"], sort=False)[["calls", "tokens", "seconds", "cut_off"]].sum().reset_index()
    per = g["loop"].map(n)
    return pd.DataFrame(
        {
            "loop": g["loop"],
            "stage": g["stage"],
            "calls_per_question": g["calls"] / per,
            "tokens_per_question": g["tokens"] / per,
            "seconds_per_question": g["seconds"] / per,
            "cut_off": g["cut_off"],
        }
    )
