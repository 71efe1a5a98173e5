"""Note selection (paper 3.4): which notes a question is shown, by strategy name (``SELECTORS``).

- ``zero-shot``: none (the active-learning module switched off).
- ``random``: n notes at random.
- ``retrieval``: the nearest question type by embedding, then the n most similar questions of that type (FAISS).
- ``combine``: the nearest type, then n notes at random within it.

When the nearest type has fewer than n notes, the authors' code gives fewer (``fill_up=False``, the default: 42 of
the 54 AQuA note types have one note); ``fill_up=True`` (setting fill_up, olakit's choice) takes further types in
order of similarity until there are n.

Seeded per question; each pick carries its cosine similarity to the question; a note whose question is the test
question itself is never given.
"""

from __future__ import annotations

import logging
import re

from olakit.errors import DataError, lookup
from olakit.names import ZERO_SHOT
from olakit.olagpt.notes import NotesLibrary
from olakit.rng import keyed_rng
from olakit.types import Note, Question

log = logging.getLogger("olakit")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _allowed(library: NotesLibrary, question: Question) -> list[int]:
    """Positions of notes that may be shown: never the test question itself."""
    own = _norm(question.text)
    keep = [i for i, n in enumerate(library.notes) if _norm(n.question) != own]
    if len(keep) < len(library.notes):
        log.info("question %s: %d note(s) with the same question left out", question.id, len(library.notes) - len(keep))
    return keep


def select_zero_shot(library, question, qtype, n, seed, fill_up) -> list[tuple[Note, float]]:
    """No notes (the active-learning module switched off)."""
    return []


def select_random(library, question, qtype, n, seed, fill_up) -> list[tuple[Note, float]]:
    """n notes drawn at random (seeded by seed and question id)."""
    allowed = _allowed(library, question)
    if not allowed or n <= 0:
        return []
    pick = keyed_rng(seed, "random", question.id).choice(allowed, size=min(n, len(allowed)), replace=False)
    sims = library.similarities(question.text)
    return [(library.notes[i], float(sims[i])) for i in pick]


def _by_type(library: NotesLibrary, qtype: str, allowed: list[int]) -> list[list[int]]:
    """Allowed note positions grouped by type, types in order of similarity to qtype."""
    ok = set(allowed)
    groups = []
    for t, _ in library.ranked_types(qtype):
        members = [i for i, note in enumerate(library.notes) if note.llm_task_type == t and i in ok]
        if members:
            groups.append(members)
    return groups


def select_retrieval(library, question, qtype, n, seed, fill_up) -> list[tuple[Note, float]]:
    """Nearest type, then the top-n most similar questions of that type (with ``fill_up``, next types fill up)."""
    allowed = _allowed(library, question)
    if not allowed or n <= 0:
        return []
    order = [i for i, _ in library.ranked_notes(question.text)]
    rank = {i: r for r, i in enumerate(order)}
    sims = library.similarities(question.text)
    out: list[int] = []
    for members in _by_type(library, qtype, allowed):
        out += sorted(members, key=rank.__getitem__)[: n - len(out)]
        if len(out) >= n or not fill_up:
            break
    return [(library.notes[i], float(sims[i])) for i in out]


def select_combine(library, question, qtype, n, seed, fill_up) -> list[tuple[Note, float]]:
    """Nearest type, then n notes at random within it (with ``fill_up``, next types fill up)."""
    allowed = _allowed(library, question)
    if not allowed or n <= 0:
        return []
    rng = keyed_rng(seed, "combine", question.id)
    sims = library.similarities(question.text)
    out: list[int] = []
    for members in _by_type(library, qtype, allowed):
        take = min(n - len(out), len(members))
        out += [int(i) for i in rng.choice(members, size=take, replace=False)]
        if len(out) >= n or not fill_up:
            break
    return [(library.notes[i], float(sims[i])) for i in out]


SELECTORS = {
    ZERO_SHOT: select_zero_shot,
    "random": select_random,
    "retrieval": select_retrieval,
    "combine": select_combine,
}


def select(
    strategy: str,
    library: NotesLibrary | None,
    question: Question,
    qtype: str,
    n: int,
    seed: int,
    fill_up: bool,
) -> list[tuple[Note, float]]:
    """Notes for one question by the named strategy: ``[(note, cosine similarity), ...]``."""
    fn = lookup(SELECTORS, strategy, "note strategy")
    if fn is select_zero_shot:
        return []
    if library is None or not len(library):
        raise DataError(f"note strategy {strategy!r} needs a non-empty notes library")
    picked = fn(library, question, qtype, n, seed, fill_up)
    if any(_norm(note.question) == _norm(question.text) for note, _ in picked):  # the guard of _allowed, kept honest
        raise DataError(f"question {question.id}: a selected note is the test question itself")
    return picked
