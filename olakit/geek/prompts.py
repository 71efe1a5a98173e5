"""GEEK's prompts, read from data/geek/prompts.json (a data file, like the thinking templates), with the few-shot
exemplars (StrategyQA train questions only) and the leakage check that refuses a prompt containing a question of the
split being evaluated.
"""

from __future__ import annotations

import re
from functools import lru_cache

from olakit.data.files import RESOURCES, read_json
from olakit.errors import DataError
from olakit.geek.actions import LETTERS
from olakit.geek.state import QuestionState

PROMPTS_FILE = RESOURCES / "geek" / "prompts.json"


@lru_cache(maxsize=1)
def prompts() -> dict:
    doc = read_json(PROMPTS_FILE)
    missing = [
        k
        for k in (
            "exemplars",
            "zero_shot",
            "cot",
            "select",
            "actions",
            "decomp",
            "pre_answer",
            "extract",
            "self_answer",
            "final",
        )
        if k not in doc
    ]
    if missing:
        raise DataError(f"{PROMPTS_FILE}: prompts {missing} missing")
    return doc


def exemplars_text() -> str:
    out = []
    for ex in prompts()["exemplars"]:
        lines = [f"Question: {ex['question']}"]
        lines += [f"Sub-question {i}: {q}" for i, (q, _) in enumerate(ex["steps"], 1)]
        out.append("\n".join(lines))
    return "\n\n".join(out)


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def check_no_leak(questions) -> None:
    """DataError when an exemplar is a question of the evaluated split (e.g. the widely used "Could Brooke Shields
    succeed at University of Pennsylvania?", a StrategyQA dev question)."""
    evaluated = {_norm(q.text): q.id for q in questions}
    for ex in prompts()["exemplars"]:
        if _norm(ex["question"]) in evaluated:
            raise DataError(
                f"{PROMPTS_FILE}: exemplar {ex['question']!r} is question {evaluated[_norm(ex['question'])]}"
                " of the split being evaluated; exemplars must come from train"
            )


def check_prompt(text: str, own_id: str, evaluated: dict[str, str]) -> None:
    """DataError when a prompt contains a question of the evaluated split other than its own (a leaked exemplar).
    ``evaluated``: question id -> normalised text (``normalised(questions)``)."""
    low = _norm(text)
    for qid, norm in evaluated.items():
        if qid != own_id and norm in low:
            raise DataError(f"a prompt for {own_id} contains question {qid} of the split being evaluated")


def normalised(questions) -> dict[str, str]:
    return {q.id: _norm(q.text) for q in questions}


def direct(row: str, question: str) -> str:
    return prompts()["zero_shot" if row == "zero-shot" else "cot"].format(question=question)


def select(state: QuestionState, allowed) -> str:
    actions = "\n".join(f"{LETTERS[a]}) {prompts()['actions'][a]}" for a in allowed)
    return prompts()["select"].format(state=state.render(), actions=actions)


def decomp(state: QuestionState, pre_answer: bool) -> str:
    return prompts()["pre_answer" if pre_answer else "decomp"].format(exemplars=exemplars_text(), state=state.render())


def extract(sub_question: str, paragraphs: list[tuple[str, str]], hint: str = "") -> str:
    shown = (
        "(no paragraph found)"
        if not paragraphs
        else "\n".join(
            f"[{i}] {title}: {text}" if title else f"[{i}] {text}" for i, (title, text) in enumerate(paragraphs, 1)
        )
    )
    return prompts()["extract"].format(
        paragraphs=shown,
        sub_question=sub_question,
        hint=f"(A guess to check against the paragraphs: {hint})\n" if hint else "",
    )


def self_answer(state: QuestionState) -> str:
    """Self Answer sees the whole question state, as every round does in the seed's Fig 3."""
    return prompts()["self_answer"].format(state=state.render(), sub_question=state.pending)


def final(state: QuestionState) -> str:
    return prompts()["final"].format(state=state.render())
