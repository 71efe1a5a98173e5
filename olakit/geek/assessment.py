"""The seed's Table 3 (ChatGPT assessment), done with any judge model: a pairwise LLM judge compares GEEK's
sub-questions and facts with StrategyQA's human decomposition and facts for the same question, in both orders
(olakit.llm.judge); olakit.analysis.traces.judge_table gives the shares Human / Equal / GEEK with their
intervals and the judge's position bias.
"""

from __future__ import annotations

import json

import pandas as pd

from olakit.errors import DataError
from olakit.llm.answerer import Answerer
from olakit.llm.judge import Judgement, judge_pairs

CONTEXT = (
    "Two reasoning chains decompose the same yes/no question into sub-questions with facts.\n"
    "Question: {question}\nWhich chain decomposes the question better, with correct and relevant facts?"
)


def chain(sub_questions, facts) -> str:
    """One chain as the judge sees it, the same layout for both sides: the sub-questions, then the facts, numbered,
    without sources (a "(retrieved)" tag would tell the judge which side is GEEK)."""
    lines = ["Sub-questions:", *(f"{i}. {s}" for i, s in enumerate(sub_questions, 1))]
    lines += ["Facts:", *(f"{i}. {f}" for i, f in enumerate(facts, 1))]
    return "\n".join(lines)


def human_chain(question) -> str:
    return chain(question.meta.get("decomposition") or [], question.meta.get("facts") or [])


def geek_chain(trace_json: str) -> str:
    """The answer-bearing branch's sub-questions and facts (the branch whose answer the majority gave; branch 0
    when no branch gave it)."""
    trace = json.loads(trace_json)
    branches = trace["branches"]
    branch = next((b for b in branches if b["branch"] == trace.get("answer_branch")), branches[0])
    if "chain" not in branch:
        raise DataError("a GEEK trace without its chain (written by an older olakit): re-run GEEK to judge it")
    return chain([s for s, _, _ in branch["chain"]], [f for _, f, _ in branch["chain"]])


def assess(answerer: Answerer, records: pd.DataFrame, questions: dict, row: str, max_tokens: int) -> list[Judgement]:
    """Judge the GEEK row's chains against the human ones (a: the human chain, b: GEEK's), each in both orders."""
    rows = records[(records["row"] == row) & (records["trace"] != "")]
    items = [
        (CONTEXT.format(question=questions[qid].text), human_chain(questions[qid]), geek_chain(t))
        for qid, t in zip(rows["question_id"], rows["trace"])
    ]
    return judge_pairs(answerer, items, max_tokens)
