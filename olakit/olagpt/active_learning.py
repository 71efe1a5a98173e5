"""Building a notes library by active learning (paper 3.4): sample the pool (Sentence-BERT embeddings, KMeans into
20 clusters, draws in proportion to cluster size), answer each question r times and keep those wrong every time
(the error book), then write their notes: explanation and error_reason by the LLM, from the dataset's own
rationale, or by a person (empty drafts saved with ``NotesLibrary.save``, completed by hand, read back with
``NotesLibrary.load``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence

import numpy as np

from olakit.data.loaders import load_questions
from olakit.data.records import answer_record
from olakit.errors import DataError, require_extra
from olakit.extract import get_extractor
from olakit.llm import Request
from olakit.llm.answerer import Answerer, refuse
from olakit.llm.two_stage import Answer
from olakit.names import ZERO_SHOT
from olakit.olagpt.config import NotesConfig
from olakit.olagpt.controller import build_prompt
from olakit.olagpt.intent import question_types, show_question
from olakit.olagpt.notes import NotesLibrary, error_reason, note_from_question
from olakit.olagpt.templates import templates_for
from olakit.result import NotesExtras, Result
from olakit.retrieval.embedder import embed
from olakit.runner import Run
from olakit.types import OlaGPTRecord, Question

log = logging.getLogger("olakit")


def sample_pool(questions: Sequence[Question], size: int, k: int = 20, seed: int = 0) -> list[Question]:
    """The paper's AQuA sampling: embed, KMeans into k clusters, draw from each in proportion to its size.

    Quotas are size * cluster share, rounded by largest remainder so they sum to ``size``.
    """
    KMeans = require_extra("sklearn.cluster", "live", "KMeans sampling").KMeans

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


def error_book(
    llm,
    questions: Sequence[Question],
    r: int = 3,
    template: str = "ST",
    seed: int = 0,
    temperature: float = 0.7,
    max_tokens: int = 256,
    extractor: str = "strict",
    qtypes: dict[str, str] | None = None,
):
    """Answer each question r times (seeded samples); return (questions wrong every time, their wrong answers, every
    answer as a record: the template, zero-shot, sample 0..r-1).

    An unparsed answer counts as wrong. Calls go through the cache, so a larger r reuses the first answers.
    """
    if not 1 <= r <= 10:
        raise DataError(f"r = {r}: answer each question 1 to 10 times (the paper uses 3 to 5)")
    tmpl = templates_for(questions[0].dataset, [template])[0] if questions else None
    qtypes = qtypes if qtypes is not None else question_types(llm, questions)
    reqs = [
        Request.make(
            build_prompt(q, qtypes[q.id], tmpl, []), sample=s, seed=seed, temperature=temperature, max_tokens=max_tokens
        )
        for q in questions
        for s in range(r)
    ]
    results = refuse(llm.batch(reqs, desc="error book"), "error book")  # a failed call is no wrong answer
    fn = get_extractor(extractor)
    book, wrong, records = [], {}, []
    for i, q in enumerate(questions):
        mine = results[i * r : (i + 1) * r]
        answers = [fn(res.text, list(q.options)) for res in mine]
        own = dict(model=llm.endpoint.model, template=template, notes_strategy=ZERO_SHOT, n_notes=0)
        records += [
            answer_record(OlaGPTRecord, q, req.message_dicts()[-1]["content"], res, Answer(a, 1), **own, sample=s,
                          question_type=qtypes[q.id])
            for s, (req, res, a) in enumerate(zip(reqs[i * r : (i + 1) * r], mine, answers))
        ]  # fmt: skip
        if all(a != q.gold for a in answers):
            book.append(q)
            wrong[q.id] = answers
    return book, wrong, records


EXPLAIN_PROMPT = (
    "You are an expert teacher. A student answered the question below wrongly several times.\n\n"
    "{question}\n\nThe student's answers: {wrong}. The correct answer is {gold}.\n{rationale}"
    "Write a short note for future students. Reply in strict JSON: "
    '{{"error_reason": "why the wrong answers are wrong", "explanation": "the correct solution '
    'step by step"}}'
)


def _parse_explanation(text: str) -> tuple[str, str]:
    m = re.search(r"\{.*\}", text or "", re.S)
    if m:
        try:
            obj = json.loads(m.group(0))
            return str(obj.get("explanation", "")).strip(), str(obj.get("error_reason", "")).strip()
        except ValueError:
            pass
    return (text or "").strip(), ""


def write_notes(
    book: Sequence[Question],
    wrong: dict,
    *,
    explainer: str = "dataset",
    llm=None,
    qtypes: dict[str, str] | None = None,
    max_tokens: int = 300,
) -> NotesLibrary:
    """Notes for an error book. ``explainer``: ``"llm"`` (explanation and error_reason by the model, told the
    gold answer and the dataset's rationale), ``"dataset"`` (the dataset's own rationale as explanation; the
    error reason states the wrong answers), or ``"person"`` (empty drafts to fill in, saved with
    NotesLibrary.save and read back with load)."""
    qtypes = qtypes or {}
    if explainer not in ("llm", "dataset", "person"):
        raise DataError(f"explainer {explainer!r}: use 'llm', 'dataset' or 'person'")
    texts: list[tuple[str, str]] = []
    if explainer == "llm":
        if llm is None:
            raise DataError("explainer 'llm' needs an llm")
        reqs = [
            Request.make(
                EXPLAIN_PROMPT.format(
                    question=show_question(q),
                    wrong=", ".join(str(a) for a in wrong.get(q.id, [])),
                    gold=q.gold,
                    rationale=f"Reference solution: {q.rationale}\n" if q.rationale else "",
                ),
                temperature=0,
                max_tokens=max_tokens,
            )
            for q in book
        ]
        texts = [_parse_explanation(r.text) for r in refuse(llm.batch(reqs, desc="writing notes"), "writing notes")]
    notes = []
    for i, q in enumerate(book):
        if explainer == "llm":
            explanation, reason = texts[i]
            expert = f"llm:{llm.endpoint.model}"
        elif explainer == "dataset":
            explanation, reason, expert = q.rationale, error_reason(wrong.get(q.id, []), q.gold), "dataset"
        else:
            explanation, reason, expert = "", "", ""
        notes.append(
            note_from_question(
                q, explanation=explanation, error_reason=reason, model_expert=expert, llm_task_type=qtypes.get(q.id, "")
            )
        )
    return NotesLibrary(notes, name=f"{book[0].dataset if book else 'empty'}-error-book")


def build_library(
    llm,
    pool: Sequence[Question],
    *,
    r: int = 3,
    size: int | None = None,
    k: int = 20,
    template: str = "ST",
    explainer: str = "dataset",
    seed: int = 0,
    max_tokens: int = 256,
) -> tuple[NotesLibrary, list]:
    """Active learning end to end: sample the pool (KMeans) when ``size`` is given, answer r times, keep the
    questions wrong every time, write their notes (with the LLM's question type). (the library, every answer as a
    record)."""
    questions = sample_pool(pool, size, k=k, seed=seed) if size else list(pool)
    qtypes = question_types(llm, questions)
    book, wrong, records = error_book(
        llm, questions, r=r, template=template, seed=seed, max_tokens=max_tokens, qtypes=qtypes
    )
    library = write_notes(book, wrong, explainer=explainer, llm=llm, qtypes=qtypes)
    log.info("active learning: %d pool questions, %d wrong in all %d tries", len(questions), len(book), r)
    return library, records


LIBRARY = "notes.jsonl"
"""The library in a notes build's folder (a folder is a library wherever a library is named: olakit.olagpt.notes)."""


def build_notes(config: NotesConfig, llm: Answerer | None = None, *, parameters: dict | None = None) -> Result:
    """``olakit notes build``: a Result of kind ``notes``: the pool's answers as records, the library as its file
    ``notes.jsonl``; every call through one run, so a failed call is refused and nothing is made."""
    cfg = config
    with Run("notes build", cfg, llm, kind="notes", parameters=parameters) as job:
        pool = load_questions(cfg.dataset, cfg.split, cfg.data_dir, cfg.dataset_map)
        if not cfg.sample:
            pool = pool[: cfg.pool]
        library, records = build_library(
            job.answerer,
            pool,
            r=cfg.r,
            size=cfg.sample,
            explainer=cfg.explainer,
            seed=cfg.seed,
            max_tokens=cfg.max_tokens,
        )
        extras = NotesExtras(library=LIBRARY, notes=len(library), pool=len(pool) if not cfg.sample else cfg.sample)
        return job.finish(records, OlaGPTRecord, extras, files={LIBRARY: library.text()})
