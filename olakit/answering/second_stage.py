"""Two-stage answer extraction (Zero-shot-CoT, Kojima et al. 2022), a named setting, off by default (the OlaGPT
paper used one stage): when a first output is cut off at the token limit or holds no answer the strict extractor
can read, a second call sends the prompt, that output and the answer trigger ("Therefore, among A through E, the
answer is", with the question's own labels; "Therefore, the answer (yes or no) is" for yes/no questions) with a
short ``max_tokens``, and the strict extractor reads the trigger and its continuation. The second call goes through
the cached client like any other; an unparseable second stage stays unparsed, never guessed.

``answer_trigger(["A", "B", "C"]) -> "Therefore, among A through C, the answer is"``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from olakit.answering.extract import get_extractor
from olakit.generation import AnswerStages
from olakit.llm.answerer import Answerer
from olakit.llm.request import Reply, Request

STAGES = (1, 2)


def answer_trigger(labels: Sequence[str]) -> str:
    """Zero-shot-CoT's answer trigger for a question's labels.

    >>> answer_trigger(["yes", "no"])
    'Therefore, the answer (yes or no) is'
    """
    labels = list(labels)
    if not labels:  # a numeric answer (no options): Kojima et al.'s trigger for arithmetic
        return "Therefore, the answer (arabic numerals) is"
    if all(len(label) > 1 for label in labels):
        return f"Therefore, the answer ({' or '.join(labels)}) is"
    return f"Therefore, among {labels[0]} through {labels[-1]}, the answer is"


def needs_second_stage(result: Reply, labels: Sequence[str], extract: Callable = get_extractor("strict")) -> bool:
    """A successful first output that was cut off at the limit, or that the extractor cannot read."""
    return result.ok and (result.finish_reason == "length" or extract(result.text, list(labels)) is None)


def prefill(output: str, labels: Sequence[str]) -> str:
    """The assistant turn the second call continues: the first output, then the trigger."""
    return f"{output.rstrip()}\n{answer_trigger(labels)}"


def second_request(first: Request, output: str, labels: Sequence[str], max_tokens: int) -> Request:
    """The second call: the first request's messages, then the first output and the trigger as the model's own
    unfinished turn, which it continues (Zero-shot-CoT's second stage; an OpenAI-compatible server such as llama.cpp
    continues a final assistant message). As a new user turn instead, small models answer the trigger by copying the
    prompt's answer-format sentence."""
    messages = [*first.message_dicts(), {"role": "assistant", "content": prefill(output, labels)}]
    return Request.make(messages, temperature=0, max_tokens=max_tokens)


def continuation(text: str | None, output: str, labels: Sequence[str]) -> str:
    """The second call's own words: a server that echoes the continued turn returns it whole; that part is dropped."""
    text, head = text or "", prefill(output, labels)
    return text[len(head) :] if text.startswith(head) else text


def read_second(text: str | None, options: Sequence[str] | Mapping[str, str]) -> str | None:
    """The label the second stage gives: the strict extractor over the trigger and its continuation; failing that,
    when ``options`` maps labels to texts and the continuation states exactly one option's text (the answer
    "is 36." where option A is "36"), that option. Nothing partial or approximate counts.

    >>> read_second(" (C) 12.", ["A", "B", "C"])
    'C'
    >>> read_second(" no.", ["yes", "no"])
    'no'
    >>> read_second(" 36.", {"A": "36", "B": "15"})
    'A'
    >>> read_second(" \\\\(\\\\boxed{36}\\\\).", {"A": "36", "B": "15"})  # the value in LaTeX: \\(\\boxed{36}\\)
    'A'
    >>> read_second(" 3.", {"A": "36", "B": "15"}) is None
    True
    >>> read_second(" not determinable from the data.", ["A", "B", "C"]) is None
    True
    """
    labels = list(options)
    found = get_extractor("strict")(f"{answer_trigger(labels)}{text or ''}", labels)
    if found is not None or not isinstance(options, Mapping) or not labels:
        return found
    stated = re.match(r"\s*[:\-]?\s*(.+?)\s*(?:[.;,]\s|[.;,]?$|\n)", text or "")
    if not stated:
        return None
    norm = lambda t: re.sub(r"\s+", " ", str(t)).strip().strip(".").lower()  # noqa: E731
    value = unwrap_math(stated.group(1))
    hits = [label for label, option in options.items() if norm(option) and norm(option) == norm(value)]
    return hits[0] if len(hits) == 1 else None


def unwrap_math(text: str) -> str:
    """A value as written in LaTeX, unwrapped: math delimiters (``\\( \\)``, ``\\[ \\]``, ``$``) and ``\\boxed{}`` or
    ``\\text{}`` around it dropped; anything else is returned as it is.

    >>> unwrap_math(r"$\\boxed{\\text{12 km}}$")
    '12 km'
    >>> unwrap_math("36")
    '36'
    """
    text = text.strip()
    while True:
        inner = re.fullmatch(r"\\\((.*)\\\)|\\\[(.*)\\\]|\$+(.*?)\$+|\\(?:boxed|text)\{(.*)\}", text, re.DOTALL)
        if not inner:
            return text
        text = next(g for g in inner.groups() if g is not None).strip()


@dataclass(frozen=True)
class Answer:
    """What an output finally answers: the label (None when unparsed), the stage that gave it, and the second
    call's result when one was made."""

    label: str | None
    stage: int
    second: Reply | None = None


def answers(
    firsts: Sequence[tuple[Request, Reply, Sequence[str] | Mapping[str, str]]],
    answerer: Answerer,
    reading: AnswerStages,
    *,
    extract: Callable = get_extractor("strict"),
) -> list[Answer]:
    """The answer of each (first request, its result, the question's labels, or its options label -> text): read by
    ``extract`` with one stage (``reading``: a method's config, its ``answer_stages`` and ``second_stage_tokens``);
    with two, the outputs that need it get one second call each (through ``answerer``), read strictly.
    A failed second call leaves the answer unparsed."""
    stages, max_tokens = reading.answer_stages, reading.second_stage_tokens
    if stages not in STAGES:
        raise ValueError(f"answer stages {stages!r}: use 1 or 2")
    out = [Answer(extract(res.text, list(labels)) if res.ok else None, 1) for _, res, labels in firsts]
    if stages == 1:
        return out
    todo = [i for i, (_, res, labels) in enumerate(firsts) if needs_second_stage(res, labels, extract)]
    if not todo:
        return out
    reqs = [second_request(firsts[i][0], firsts[i][1].text or "", firsts[i][2], max_tokens) for i in todo]
    for i, res in zip(todo, answerer.batch(reqs, "second-stage answers")):
        own = continuation(res.text, firsts[i][1].text or "", firsts[i][2])
        out[i] = Answer(read_second(own, firsts[i][2]) if res.ok else None, 2, res)
    return out
