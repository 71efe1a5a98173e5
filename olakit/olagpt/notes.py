"""The notes library (paper 3.4): hard questions with answers and explanations, shown to the model as examples.

A ``NotesLibrary`` is a list of ``Note`` (schema: question, answer, error_reason, model_expert, explanation,
llm_task_type, plus id, source, options, dataset), saved as JSON Lines, with embedding indexes over its questions
and its question types. ``olagpt_library()`` is the OlaGPT authors' 81 AQuA notes, ``olagpt_ekar_library()``
their 2 E-KAR notes.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from olakit.answering.read import canonical_number
from olakit.data.files import read_jsonl, write_atomic
from olakit.data.loaders import load_olagpt_notes
from olakit.errors import DataError
from olakit.retrieval.corpus import Corpus
from olakit.retrieval.dense import flat_index, search
from olakit.retrieval.embedder import embed
from olakit.retrieval.retrievers import make_retriever
from olakit.types import Note, Question

NOTE_FIELDS = [f.name for f in dataclasses.fields(Note)]


class NotesLibrary:
    """Notes with a FAISS index over their questions and one over their question types."""

    def __init__(self, notes: Iterable[Note], name: str = "notes"):
        self.notes = list(notes)
        self.name = name
        ids = [n.id for n in self.notes]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise DataError(f"notes library {name!r}: duplicate note ids {dup[:5]}")
        self._by_id = {n.id: n for n in self.notes}
        self._vecs = None
        self._types: list[str] | None = None

    def __len__(self) -> int:
        return len(self.notes)

    def __getitem__(self, note_id: str) -> Note:
        return self._by_id[note_id]

    # -- persistence
    def text(self) -> str:
        """The library as JSON Lines, one note per line."""
        return "".join(json.dumps(dataclasses.asdict(n), ensure_ascii=False) + "\n" for n in self.notes)

    def save(self, path: str | os.PathLike) -> Path:
        """JSON Lines, one note per line, written atomically (also how a person gets drafts to complete)."""
        text = self.text()
        return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))

    @classmethod
    def load(cls, path: str | os.PathLike) -> NotesLibrary:
        """Read a JSON Lines library (as written by save, or edited by hand); errors name file and line."""
        path = Path(path)
        if not path.is_file():
            raise DataError(f"{path}: notes library not found")
        notes = []
        for lineno, obj in read_jsonl(path):
            notes.append(note_from_dict(obj, f"{path} line {lineno}"))
        return cls(notes, name=path.stem)

    # -- indexes
    def _ensure_index(self) -> None:
        if self._vecs is None:
            self._vecs = embed([n.question for n in self.notes])
            self._types = list(dict.fromkeys(n.llm_task_type for n in self.notes))
            self._type_index = flat_index(embed(self._types))
            self._note_index = flat_index(self._vecs)

    def ranked_types(self, qtype: str) -> list[tuple[str, float]]:
        """The library's question types, most similar to ``qtype`` first."""
        self._ensure_index()
        return [(self._types[i], s) for i, s in search(self._type_index, embed([qtype])[0], len(self._types))]

    def similarities(self, text: str) -> np.ndarray:
        """Cosine similarity of ``text`` to every note's question (library order)."""
        self._ensure_index()
        return self._vecs @ embed([text])[0]

    def ranked_notes(self, text: str) -> list[tuple[int, float]]:
        """(note position, similarity), most similar first, by FAISS."""
        self._ensure_index()
        return search(self._note_index, embed([text])[0], len(self.notes))


def note_from_dict(obj: dict, where: str) -> Note:
    """A Note from a JSON object, checked: id, question and answer present, options an object (empty for a numeric
    question, whose answer is then a number), the answer among the options."""
    if not isinstance(obj, dict):
        raise DataError(f"{where}: a note must be a JSON object")
    missing = [k for k in ("id", "question", "answer") if not obj.get(k)] + ([] if "options" in obj else ["options"])
    if missing:
        raise DataError(f"{where}: note lacks {missing}; a note needs id, question, options and answer")
    unknown = sorted(set(obj) - set(NOTE_FIELDS))
    if unknown:
        raise DataError(f"{where}: unknown note fields {unknown}; known: {NOTE_FIELDS}")
    if not isinstance(obj["options"], dict):
        raise DataError(f"{where}: options must be an object of label -> text")
    answer = str(obj["answer"]).strip()
    if not obj["options"]:  # a numeric question's note
        label = canonical_number(answer)
        if label is None:
            raise DataError(f"{where}: a note without options needs a numeric answer, not {answer!r}")
    else:
        label = answer if answer in obj["options"] else answer[:1]
    if obj["options"] and label not in obj["options"]:
        raise DataError(f"{where}: answer {answer!r} is not one of the options {sorted(obj['options'])}")
    return Note(
        **{
            **{k: "" for k in NOTE_FIELDS if k not in ("options",)},
            **obj,
            "answer": label,
            "id": str(obj["id"]),
            "source": str(obj.get("source") or "manual"),
            "provenance": tuple(obj.get("provenance") or ()),
        }
    )


def olagpt_library(data_dir=None) -> NotesLibrary:
    """The OlaGPT authors' AQuA notes library (81 notes from AQuA train, LLM-labelled types)."""
    notes = [note_from_dict(d, f"OlaGPT note {d['id']}") for d in load_olagpt_notes(data_dir, "aqua")]
    return NotesLibrary(notes, name="olagpt-aqua")


def olagpt_ekar_library(data_dir=None) -> NotesLibrary:
    """The two E-KAR (Chinese) notes of the OlaGPT repository: a tiny library for tests and demos; build a real one
    from E-KAR train by active learning (olakit.olagpt.active_learning.build_library)."""
    notes = [note_from_dict(d, f"OlaGPT note {d['id']}") for d in load_olagpt_notes(data_dir, "ekar_zh")]
    return NotesLibrary(notes, name="olagpt-ekar")


LIBRARIES = {"olagpt": olagpt_library, "olagpt-ekar": olagpt_ekar_library}
"""Built-in libraries by name; anything else names a JSON Lines file."""


def resolve_library(spec: str | None, data_dir=None) -> NotesLibrary | None:
    """A library by name (``"olagpt"``, ``"olagpt-ekar"``), file path or a notes build's folder (its notes.jsonl);
    None for None."""
    if spec is None:
        return None
    if spec in LIBRARIES:
        return LIBRARIES[spec](data_dir)
    path = Path(spec)
    return NotesLibrary.load(path / "notes.jsonl" if path.is_dir() else path)


def check_library(library: NotesLibrary, dataset: str, cross: bool = False) -> NotesLibrary:
    """``library`` if its notes are of ``dataset`` (or record none, as a hand-made file may), or ``cross``: a
    cross-dataset condition asked for; else DataError naming both datasets and the two ways on."""
    theirs = sorted({n.dataset for n in library.notes if n.dataset})
    if cross or not theirs or theirs == [dataset]:
        return library
    raise DataError(
        f"notes library {library.name!r} holds notes of {', '.join(theirs)}, and the questions are {dataset}'s: "
        f"give a library of {dataset} (library=..., built by olakit notes build --dataset {dataset}), or set "
        "cross_dataset_notes to show another dataset's notes on purpose"
    )


def library_of(config, dataset: str) -> NotesLibrary | None:
    """The notes library an OlaGPT run reads (``config.notes_library()``: as set, else its dataset's own), checked
    against the dataset its questions carry (check_library); None where it names none and has no built-in one."""
    spec = config.notes_library()
    if spec is None:
        return None
    return check_library(resolve_library(spec, config.data_dir), dataset, config.cross_dataset_notes)


def error_reason(wrong: Sequence[str | None], gold: str) -> str:
    """The error reason a note records when its explanation comes from the dataset or a draft.

    >>> error_reason(["B", None], "C")
    'answered B, unparsed instead of C'
    """
    answers = ", ".join("unparsed" if a is None else str(a) for a in wrong)
    return f"answered {answers} instead of {gold}"


def note_from_question(
    q: Question,
    *,
    explanation: str = "",
    error_reason: str = "",
    model_expert: str = "",
    llm_task_type: str = "",
    source: str = "",
) -> Note:
    """A note of a dataset question (id ``dataset:question id``)."""
    return Note(
        id=f"{q.dataset}:{q.id}",
        source=source or f"active-learning:{q.dataset}",
        question=q.text,
        options=dict(q.options),
        answer=q.gold,
        explanation=explanation,
        error_reason=error_reason,
        model_expert=model_expert,
        llm_task_type=llm_task_type,
        dataset=q.dataset,
    )


@lru_cache(maxsize=8)
def _notes_retriever(spec: str, retriever: str, data_dir: str | None):
    library = resolve_library(spec, data_dir)
    if library is None or not len(library):
        raise DataError(f"notes library {spec!r} is empty")
    corpus = Corpus(
        name=f"notes:{library.name}",
        ids=[n.id for n in library.notes],
        titles=[n.llm_task_type for n in library.notes],
        texts=[n.question for n in library.notes],
    )
    return library, make_retriever(retriever, corpus)  # fmt: skip


def search_notes(query: str, library: str = "olagpt", retriever: str = "bm25", k: int = 2,
                 data_dir: str | None = None) -> str:  # fmt: skip
    """The ``notes`` tool: the ``k`` notes of ``library`` whose questions best match ``query`` (past hard questions
    with their answers and explanations), as text."""
    if not query.strip():
        return "no query given: write the question to look up"
    lib, found = _notes_retriever(library, retriever, data_dir)
    out = []
    for i, (p, _) in enumerate(found.search(query, min(k, len(lib.notes))), 1):
        n = lib.notes[p]
        options = "; ".join(f"{label}) {text}" for label, text in n.options.items())
        shown = f"[{i}] Question: {n.question}" + (f" Options: {options}" if options else "")
        out.append(shown + f"\nAnswer: {n.answer}" + (f"\nExplanation: {n.explanation}" if n.explanation else ""))
    return "\n".join(out)
