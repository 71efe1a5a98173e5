"""The controller (paper 3.6, Fig 3): assemble prompts and turn a grid of conditions into unique prompts.

A prompt is, in the order of Fig 3: the notes as examples (in the authors' layout or olakit's), the template text
(ST's trigger after the question under the authors' settings), the framed question (intent.frame_question). Under
olakit's settings every template's text comes last, after the answer-format sentence (where the authors put ST's
trigger): the prompts of one question and note strategy then share everything up to their last lines, which an
endpoint's prompt cache reuses (olakit.llm.prefix).

``plan()`` expands question slice x templates x strategies x n_notes x samples into ``Call``s; identical prompts
(e.g. zero-shot for every n) share one cache key, so each is paid for once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from olakit.llm import Request
from olakit.olagpt.config import OlaGPTConfig
from olakit.olagpt.intent import frame_question, show_question
from olakit.olagpt.notes import NotesLibrary
from olakit.olagpt.selection import select
from olakit.types import Note, Question, Template

NOTES_HEADER = "Here are notes on similar questions that were answered wrongly before, with their solutions:"
"""The header of olakit's own note layout (setting notes_layout="olakit")."""
PAPER_NOTES_HEADER = (
    "Here are some similar questions, and the solving process that may assist you in answering your questions: \n"
)
"""The header of the authors' note layout (their notes/prompts.py construct_notes)."""


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


def paper_note(note: Note, template: Template | None) -> str:
    """One note as the authors' construct_note writes it (their whitespace included): type and question with its
    choices, the template's note prefix and the explanation, then the answer in the answer format."""
    choices = "".join(f"{label}){text}\n" for label, text in note.options.items())
    question = (
        f"question: {note.question}\n\nchoices: \n{choices}\n" if note.options else f"question: {note.question}\n"
    )
    answer = f"{note.answer}){note.options.get(note.answer, '')}" if note.options else note.answer  # a number
    prefix = template.note_prefix if template is not None else ""
    return f"""
        This is a kind of {note.llm_task_type}: {question} \n
        {prefix} {note.explanation}.
        Therefore, the answer is: {{"Answer": "{answer}"}}.
        """


def notes_block(notes: Sequence[Note], template: Template | None, layout: str = "paper") -> str:
    """The notes shown before the question: the authors' layout (``paper``: each template sees its own note
    prefix) or olakit's (``olakit``: the same text for every template, answer before explanation)."""
    if layout == "paper":
        return PAPER_NOTES_HEADER + "".join(paper_note(n, template) + "\n" for n in notes)
    return NOTES_HEADER + "\n\n" + "\n\n".join(show_note(i, n) for i, n in enumerate(notes, 1))


def build_prompt(
    question: Question,
    qtype: str,
    template: Template | None,
    notes: Sequence[Note],
    config: OlaGPTConfig = OlaGPTConfig(),
) -> str:
    """Notes as examples, then the template text, then the framed question (Fig 3); a template's text comes after
    the answer-format sentence instead under ``template_position="after"`` (olakit's preset), and under the
    authors' settings for a template they put there (ST's trigger)."""
    parts = []
    if notes:
        parts.append(notes_block(notes, template, config.notes_layout))
    position = config.template_position
    after = template is not None and (
        position == "after" or (position == "paper" and template.paper_position == "after")
    )
    if template is not None and template.prefix and not after:
        parts.append(template.prefix)
    parts.append(frame_question(question, qtype))
    if after and template.prefix:
        parts.append(template.prefix)
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
    library: NotesLibrary | None,
    config: OlaGPTConfig = OlaGPTConfig(),
    *,
    stage: str = "template",
    samples: int = 1,
    name: str | None = None,
) -> list[Call]:
    """Every (question, template, strategy, n, sample) cell of ``config`` (its strategies, note counts, prompt seed,
    note layout, template position and fill-up), each call with ``stage``'s generation settings (``template``, or
    ``sc`` for self-consistency's ``samples``). Zero-shot takes n = 0 only. ``name`` relabels the template in the
    records (e.g. ``"SC"`` for self-consistency samples)."""
    seed, params = config.prompt_seed, config.for_stage(stage).params()
    calls = []
    for q in questions:
        qtype = qtypes[q.id]
        for strategy in config.strategies:
            for n in [0] if strategy == "zero-shot" else sorted(set(config.n_notes)):
                picked = select(strategy, library, q, qtype, n, seed, fill_up=config.fill_up)
                notes = [note for note, _ in picked]
                for t in templates:
                    prompt = build_prompt(q, qtype, t, notes, config)
                    for s in range(samples):
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
