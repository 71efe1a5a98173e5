"""The judge role's prompts: a pairwise LLM judge, asked in both orders so its position bias is measured, not
hidden; and a free-text answer graded against its reference (``reference_request``).

``judge_pairs(llm, items, max_tokens)`` takes (context, answer_a, answer_b) triples; each is judged twice (a first,
then b first); an item's verdict is ``a``, ``b`` or ``tie`` (the two orders disagree, or a tie was said), and a
reply that names neither is counted as ``unclear`` (recorded, never guessed); a failed call is no verdict at all:
CallsFailed.
The shares, with their intervals, and the position bias (how often the judge picked the first-shown answer) are
olakit.analysis.intervals.verdict_shares.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from olakit.llm.answerer import Answerer, refuse
from olakit.llm.request import Request

JUDGE_PROMPT = (
    "You compare two answers to the same task.\n\n{context}\n\n[Answer 1]\n{first}\n\n[Answer 2]\n{second}\n\n"
    "Which answer is better: more correct, more complete and more useful? Reply with exactly one of "
    '"Answer 1", "Answer 2" or "Tie", then one sentence of reason.'
)


def parse_verdict(text: str | None) -> str | None:
    """``"1"``, ``"2"``, ``"tie"`` or None when the reply names none (or both).

    >>> parse_verdict("Answer 2 is better because ...")
    '2'
    >>> parse_verdict("Tie: both are wrong.")
    'tie'
    >>> parse_verdict("I cannot say.") is None
    True
    """
    head = (text or "").strip()[:80].lower()
    found = set(re.findall(r"answer\s*([12])\b", head))
    if head.startswith("tie") or (not found and re.search(r"\btie\b", head)):
        return "tie"
    return found.pop() if len(found) == 1 else None


@dataclass(frozen=True)
class Judgement:
    verdict: str
    """``a``, ``b``, ``tie`` or ``unclear``."""
    first_order: str | None
    second_order: str | None


def combine(first: str | None, second: str | None) -> Judgement:
    """The verdict of one item from its two orders: in the first order a is Answer 1, in the second b is.

    >>> combine("1", "2").verdict, combine("1", "1").verdict, combine(None, "2").verdict
    ('a', 'tie', 'unclear')
    """
    if first is None or second is None:
        return Judgement("unclear", first, second)
    a_first = {"1": "a", "2": "b", "tie": "tie"}[first]
    b_first = {"1": "b", "2": "a", "tie": "tie"}[second]
    return Judgement(a_first if a_first == b_first else "tie", first, second)


def judge_requests(items: Sequence[tuple[str, str, str]], max_tokens: int) -> list[Request]:
    """Two requests per item: a shown first, then b shown first."""
    reqs = []
    for context, a, b in items:
        for first, second in ((a, b), (b, a)):
            reqs.append(
                Request.make(
                    JUDGE_PROMPT.format(context=context, first=first, second=second),
                    temperature=0,
                    max_tokens=max_tokens,
                )
            )
    return reqs


def judge_pairs(answerer: Answerer, items: Sequence[tuple[str, str, str]], max_tokens: int) -> list[Judgement]:
    """Judge every item in both orders."""
    results = refuse(answerer.batch(judge_requests(items, max_tokens), "pairwise judge"), "judge: pairwise judge")
    out = []
    for i in range(len(items)):
        r1, r2 = results[2 * i], results[2 * i + 1]
        out.append(combine(parse_verdict(r1.text), parse_verdict(r2.text)))
    return out


REFERENCE_PROMPT = (
    "You grade an answer against the reference answer to the same question.\n\nQuestion: {question}\n\n"
    "Reference answer: {reference}\n\nAnswer to grade: {answer}\n\nDoes the answer to grade say what the reference "
    "answer says? Reply with yes or no, then one sentence of reason."
)


def reference_request(question: str, reference: str, answer: str, max_tokens: int) -> Request:
    """The judge's call on one free-text answer; its reply is read as yes (the same answer) or no."""
    prompt = REFERENCE_PROMPT.format(question=question, reference=reference, answer=answer or "(no answer)")
    return Request.make(prompt, temperature=0, max_tokens=max_tokens)


def parse_grade(text: str | None) -> str | None:
    """The judge's grade: ``yes`` or ``no`` as its reply's first word, else None (unclear: recorded, never guessed).

    >>> parse_grade("Yes, it says the same."), parse_grade('"No." It misses the cause.'), parse_grade("Partly.")
    ('yes', 'no', None)
    """
    m = re.match(r"[\s\"'*(\[]*(yes|no)\b", text or "", re.IGNORECASE)
    return m.group(1).lower() if m else None
