"""Verification thinking (OlaGPT, section 3.5), built from the review loop's parts: a candidate answer is reviewed
once (the blog's review prompt and strict scores) and, when its overall score is below the threshold or unparseable,
revised from the review. OlaGPT's runner applies it to every template's answer before the vote.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from olakit.generation import Generation
from olakit.llm.answerer import Answerer
from olakit.llm.request import Request
from olakit.review.loop import prompts
from olakit.review.parse import parse_scores


@dataclass(frozen=True)
class Verified:
    answer: str
    """The answer after verification: the candidate, or its revision."""
    score: int | None
    revised: bool
    review: str


def verify(
    answerer: Answerer, items: Sequence[tuple[str, str]], *, threshold: int, generation: Generation
) -> list[Verified]:
    """Review each (question, candidate answer); revise those scored below ``threshold`` (or unparseable); each
    call with the verify stage's ``generation`` settings."""
    p = prompts()

    def req(system, user):
        msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
        return Request.make(msgs, **generation.params())

    reviews = answerer.batch(
        [req(p["review_system"], p["review_user"].format(question=q, answer=a) + p["score_format"]) for q, a in items],
        "verification reviews",
    )
    scores = [parse_scores(r.text)["overall"] if r.ok else None for r in reviews]
    todo = [i for i, s in enumerate(scores) if s is None or s < threshold]
    revised = answerer.batch(
        [
            req(None, p["revise_user"].format(question=items[i][0], answer=items[i][1], review=reviews[i].text or ""))
            for i in todo
        ],
        "verification revisions",
    )
    new = dict(zip(todo, revised))
    return [
        Verified(
            answer=(new[i].text or a) if i in new else a,
            score=scores[i],
            revised=i in new,
            review=reviews[i].text or "",
        )
        for i, (_, a) in enumerate(items)
    ]
