"""The controller (paper 3.6, Fig 3): assemble prompts and turn a grid of conditions into unique prompts.

A prompt is, in the order of Fig 3: the notes as examples, the template prefix, the framed question
(intent.frame_question). ``plan()`` expands question slice x templates x strategies x n_notes x samples into ``Call``s;
identical prompts (e.g. zero-shot for every n) share one cache key, so each is paid for once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from olakit.llm import Request, cache_key
from olakit.olagpt.intent import frame_question, show_question
from olakit.olagpt.notes import NotesLibrary
from olakit.olagpt.selection import select
from olakit.types import Note, Question, Template

NOTES_HEADER = "Here are notes on similar questions that were answered wrongly before, with their solutions:"


def show_note(i: int, note: Note) -> str:
    """One note as an example block."""
    lines = [
        f"Note {i} ({note.llm_task_type or 'question'}):",
        show_question(
            Question(id=note.id, dataset=note.dataset, text=note.question, options=note.options, gold=note.answer)
        ),
    ]
    lines.append(f"Answer: {note.answer}")
    if note.error_reason:
        lines.append(f"Error reason: {note.error_reason}")
    if note.explanation:
        lines.append(f"Explanation: {note.explanation}")
    return "\n".join(lines)


def build_prompt(question: Question, qtype: str, template: Template | None, notes: Sequence[Note]) -> str:
    """Notes as examples, then the template prefix, then the framed question (Fig 3)."""
    parts = []
    if notes:
        parts.append(NOTES_HEADER + "\n\n" + "\n\n".join(show_note(i, n) for i, n in enumerate(notes, 1)))
    if template is not None and template.prefix:
        parts.append(template.prefix)
    parts.append(frame_question(question, qtype))
    return "\n\n".join(parts)


@dataclass(frozen=True)
class Call:
    """One cell of the grid for one question: the request and what the record must remember."""

    question: Question
    template: str
    notes_strategy: str
    n_notes: int
    sample: int
    request: Request
    prompt: str
    note_ids: tuple[str, ...]
    note_sims: tuple[float, ...]
    question_type: str


def plan(
    questions: Sequence[Question],
    qtypes: dict[str, str],
    templates: Sequence[Template],
    strategies: Sequence[str],
    n_notes: Sequence[int],
    library: NotesLibrary | None,
    *,
    samples: int = 1,
    seed: int = 0,
    temperature: float = 0.0,
    max_tokens: int = 256,
    name: str | None = None,
) -> list[Call]:
    """Every (question, template, strategy, n, sample) cell. Zero-shot takes n = 0 only. ``name`` relabels the
    template in the records (e.g. ``"SC"`` for self-consistency samples of ST)."""
    calls = []
    for q in questions:
        qtype = qtypes[q.id]
        for strategy in strategies:
            for n in [0] if strategy == "zero-shot" else sorted(set(n_notes)):
                picked = select(strategy, library, q, qtype, n, seed)
                notes = [note for note, _ in picked]
                for t in templates:
                    prompt = build_prompt(q, qtype, t, notes)
                    for s in range(samples):
                        params = {"temperature": temperature, "max_tokens": max_tokens}
                        if samples > 1 or temperature > 0:
                            params["seed"] = seed
                        calls.append(
                            Call(
                                q,
                                name or t.name,
                                strategy,
                                n,
                                s,
                                Request.make(prompt, sample=s, **params),
                                prompt,
                                tuple(note.id for note in notes),
                                tuple(round(x, 6) for _, x in picked),
                                qtype,
                            )
                        )
    return calls


def unique_requests(calls: Sequence[Call], identity: str) -> list[Request]:
    """The distinct requests of a plan (what a cold cache pays for)."""
    seen: dict[str, Request] = {}
    for c in calls:
        seen.setdefault(cache_key(identity, c.request), c.request)
    return list(seen.values())
