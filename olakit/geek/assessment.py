"""The seed's Table 3 (ChatGPT assessment), done with any judge model: a pairwise LLM judge compares GEEK's
sub-questions and facts with StrategyQA's human decomposition and facts for the same question, in both orders
(olakit.llm.judge), and reports the shares Human / Equal / GEEK with CIs and the judge's position bias.
"""

from __future__ import annotations

import json

import pandas as pd

from olakit.llm.answerer import Answerer
from olakit.llm.judge import judge_pairs, summary

CONTEXT = (
    "Two reasoning chains decompose the same yes/no question into sub-questions with facts.\n"
    "Question: {question}\nWhich chain decomposes the question better, with correct and relevant facts?"
)


def human_chain(question) -> str:
    decomposition = question.meta.get("decomposition") or []
    facts = question.meta.get("facts") or []
    lines = [f"Sub-question {i}: {d}" for i, d in enumerate(decomposition, 1)]
    lines += [f"Fact {i}: {f}" for i, f in enumerate(facts, 1)]
    return "\n".join(lines) or "(none)"


def geek_chain(trace_json: str) -> str:
    """The first branch's state without the question line (its sub-questions and facts)."""
    state = json.loads(trace_json)["branches"][0]["state"]
    return "\n".join(state.splitlines()[1:]) or "(none)"


def assess(answerer: Answerer, records: pd.DataFrame, questions: dict, row: str = "Full") -> tuple[dict, list]:
    """Judge the GEEK row's chains against the human ones: (summary with Human / Equal / GEEK shares, judgements)."""
    rows = records[(records["row"] == row) & (records["trace"] != "")]
    items = [
        (CONTEXT.format(question=questions[qid].text), human_chain(questions[qid]), geek_chain(t))
        for qid, t in zip(rows["question_id"], rows["trace"])
    ]
    judgements = judge_pairs(answerer, items)
    out = summary(judgements, labels=("human", "geek"))
    out["equal"], out["equal_ci"] = out.pop("tie"), out.pop("tie_ci")
    out["row"] = row
    return out, judgements
