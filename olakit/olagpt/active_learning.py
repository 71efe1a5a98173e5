"""Building a notes library by active learning (paper 3.4): sample the pool (Sentence-BERT embeddings, KMeans into
20 clusters, a setting, draws in proportion to cluster size), answer each question r times with a template (ST, a
setting) and keep those wrong every time (the error book), then write their notes: explanation and error_reason by
the LLM told the answer, from the dataset's own rationale, by a person (empty drafts saved with
``NotesLibrary.save``, completed by hand, read back with ``NotesLibrary.load``), by the model's own self-correction
(the paper's "following prompts until a self-correction is made": retries with hints, each kept as provenance), or
by the model refining an expert's drafts (the paper's "experts first, then LLMs refine"). Each note can be
checked: the model, shown the note, answers its own question.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Sequence

import numpy as np

from olakit.answering.extract import get_extractor
from olakit.answering.second_stage import Answer
from olakit.data.loaders import load_questions
from olakit.data.records import answer_record
from olakit.errors import DataError, require_extra
from olakit.llm import Request
from olakit.llm.answerer import Answerer, refuse
from olakit.names import ZERO_SHOT
from olakit.olagpt.config import NotesConfig
from olakit.olagpt.controller import build_prompt
from olakit.olagpt.intent import question_types, show_question
from olakit.olagpt.notes import NotesLibrary, error_reason, note_from_question
from olakit.result import NotesExtras, Result
from olakit.retrieval.embedder import embed
from olakit.runner import Run
from olakit.templates import templates_for
from olakit.types import Note, OlaGPTRecord, Question

log = logging.getLogger("olakit")


def sample_pool(questions: Sequence[Question], size: int, k: int, seed: int) -> list[Question]:
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
    config: NotesConfig,
    *,
    qtypes: dict[str, str] | None = None,
):
    """Answer each question ``config.r`` times with its ``template`` (seeded samples, the ``answer`` stage's
    settings); return (questions wrong every time, their wrong answers, every answer as a record: the template,
    zero-shot, sample 0..r-1), each read with its ``extractor``.

    An unparsed answer counts as wrong. Calls go through the cache, so a larger r reuses the first answers.
    """
    r, template, params = config.r, config.template, config.for_stage("answer").params()
    tmpl = templates_for(questions[0].dataset, [template])[0] if questions else None
    qtypes = qtypes if qtypes is not None else question_types(llm, questions, config.for_stage("question_type"))
    reqs = [
        Request.make(build_prompt(q, qtypes[q.id], tmpl, []), sample=s, **params) for q in questions for s in range(r)
    ]
    results = refuse(llm.batch(reqs, desc="error book"), "error book")  # a failed call is no wrong answer
    fn = get_extractor(config.extractor)
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
    config: NotesConfig,
    *,
    llm=None,
    qtypes: dict[str, str] | None = None,
) -> NotesLibrary:
    """Notes for an error book, by the config's ``explainer`` (NotesConfig, passed whole: its explainer and token
    limit have no second default here): ``"llm"`` (explanation and error_reason by the model, told the gold answer
    and the dataset's rationale, at ``max_tokens``), ``"dataset"`` (the dataset's own rationale as explanation; the
    error reason states the wrong answers), or ``"person"`` (empty drafts to fill in, saved with NotesLibrary.save
    and read back with load). ``self-correction`` and ``refine`` are self_correct's and refine_drafts'."""
    qtypes = qtypes or {}
    explainer = config.explainer
    if explainer not in ("llm", "dataset", "person"):
        raise DataError(f"explainer {explainer!r} writes no notes from an error book here: write_notes writes them "
                        "by 'llm', 'dataset' or 'person' (self_correct and refine_drafts the others)")  # fmt: skip
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
                **config.for_stage("explain").params(),
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


HINTS = (
    "Those answers are wrong.",
    "Those answers are wrong: check each step of the reasoning and each calculation again.",
    "Those answers are wrong, and the answer is none of {wrong}: check each step against the question.",
)
"""The self-correction hints, one per try and stronger each time (the last repeats); none tells the answer."""


def _hint(t: int, wrong: Sequence[str]) -> str:
    """Try ``t``'s hint (from 0): HINTS in turn, the last repeating; the one naming the wrong options only when some
    earlier answer gave an option (else the one before it)."""
    i = min(t, len(HINTS) - 1)
    if "{wrong}" in HINTS[i] and not wrong:
        i -= 1
    return HINTS[i].format(wrong=", ".join(wrong))


RETRY_PROMPT = "{prompt}\n\nEarlier answers to this question: {wrong}. {hint} Solve it again step by step."
"""A self-correction try: the question as the template asked it, the earlier answers and the try's hint."""


def self_correct(
    llm,
    book: Sequence[Question],
    wrong: dict,
    config: NotesConfig,
    *,
    qtypes: dict[str, str] | None = None,
) -> tuple[list[Note], int]:
    """The paper's notes "following prompts until a self-correction is made": each question of the error book is
    asked again with its wrong answers and a hint (HINTS, never the answer) until the model's own answer is the
    gold, at most ``config.tries`` times (its ``template``, the ``retry`` stage's settings and its ``extractor``); the
    right try's reasoning is the explanation, every try the provenance. A question never
    corrected gets no note. (the notes, the calls made)."""
    template, tries, params = config.template, config.tries, config.for_stage("retry").params()
    tmpl = templates_for(book[0].dataset, [template])[0] if book else None
    qtypes = qtypes or {}
    fn = get_extractor(config.extractor)
    tried = {q.id: [] for q in book}
    going, calls = list(book), 0
    for t in range(tries):
        reqs, hints = [], []
        for q in going:
            earlier = [*wrong.get(q.id, []), *(x["answer"] for x in tried[q.id])]
            shown = ", ".join("unparsed" if a is None else str(a) for a in earlier)
            labels = sorted({str(a) for a in earlier if a is not None})
            hints.append(hint := _hint(t, labels))
            prompt = build_prompt(q, qtypes.get(q.id, ""), tmpl, [])
            reqs.append(Request.make(RETRY_PROMPT.format(prompt=prompt, wrong=shown, hint=hint), sample=t, **params))
        replies = refuse(llm.batch(reqs, desc=f"self-correction, try {t + 1}"), "self-correction")
        calls += len(reqs)
        for q, hint, rep in zip(going, hints, replies):
            answer = fn(rep.text, list(q.options))
            tried[q.id].append({"try": t + 1, "hint": hint, "output": rep.text,
                                "answer": answer, "right": answer == q.gold})  # fmt: skip
        going = [q for q in going if not tried[q.id][-1]["right"]]
        if not going:
            break
    notes = []
    for q in book:
        if not tried[q.id] or not tried[q.id][-1]["right"]:
            continue
        right = tried[q.id][-1]
        earlier = [*wrong.get(q.id, []), *(x["answer"] for x in tried[q.id][:-1])]
        note = note_from_question(q, explanation=right["output"].strip(), error_reason=error_reason(earlier, q.gold),
                                  model_expert=f"llm:{llm.endpoint.model} (self-corrected at try {right['try']})",
                                  llm_task_type=qtypes.get(q.id, ""))  # fmt: skip
        notes.append(dataclasses.replace(note, provenance=tuple(tried[q.id])))
    log.info("self-correction: %d of %d questions corrected within %d tries", len(notes), len(book), tries)
    return notes, calls


REFINE_PROMPT = (
    "An expert drafted this note on a question that models often get wrong.\n\n{question}\n\nThe correct answer "
    "is {gold}.\nThe expert's draft: {draft}\n{reason}Refine the note: make the solution correct, complete and "
    "clear, and keep the expert's approach. Reply in strict JSON: "
    '{{"error_reason": "why models get it wrong", "explanation": "the correct solution step by step"}}'
)


def refine_drafts(llm, drafts: NotesLibrary, config: NotesConfig) -> list[Note]:
    """The paper's "experts first, then LLMs refine": each draft note (an expert's explanation, perhaps partial)
    refined by the model (the ``refine`` stage's settings); the draft is kept as provenance, a reply that is no JSON
    note keeps the draft's text."""
    params = config.for_stage("refine").params()
    reqs = [
        Request.make(REFINE_PROMPT.format(question=_note_question(n), gold=n.answer, draft=n.explanation or "(empty)",
                                          reason=f"Why models get it wrong: {n.error_reason}\n" if n.error_reason
                                          else ""), **params)
        for n in drafts.notes
    ]  # fmt: skip
    replies = refuse(llm.batch(reqs, desc="refining drafts"), "refining drafts")
    out = []
    for n, rep in zip(drafts.notes, replies):
        explanation, reason = _parse_explanation(rep.text)
        step = {"draft": n.explanation, "error_reason": n.error_reason, "by": n.model_expert or "expert",
                "refined_by": f"llm:{llm.endpoint.model}"}  # fmt: skip
        by = f"{n.model_expert or 'expert'}, refined by llm:{llm.endpoint.model}"
        out.append(dataclasses.replace(n, explanation=explanation or n.explanation,
                                       error_reason=reason or n.error_reason, model_expert=by,
                                       provenance=(*n.provenance, step)))  # fmt: skip
    return out


def _note_question(n: Note) -> str:
    options = "\n".join(f"{label}) {text}" for label, text in n.options.items())
    return f"{n.question}\n{options}" if options else n.question


def check_notes(llm, notes: Sequence[Note], config: NotesConfig) -> tuple[list[Note], int]:
    """Each note checked: the model, shown the note alone as its example, answers the note's own question (the
    config's ``template``'s prompt, the ``check`` stage's settings, read with its ``extractor``); the answer and
    whether it is right are appended to the note's provenance. (the notes, how many passed)."""
    template, params = config.template, config.for_stage("check").params()
    fn = get_extractor(config.extractor)
    qs = [Question(id=n.id, dataset=n.dataset, text=n.question, options=dict(n.options), gold=n.answer) for n in notes]
    tmpls = {q.dataset: templates_for(q.dataset, [template])[0] for q in qs}
    reqs = [Request.make(build_prompt(q, n.llm_task_type, tmpls[q.dataset], [n]), **params) for q, n in zip(qs, notes)]
    replies = refuse(llm.batch(reqs, desc="checking notes"), "checking notes") if reqs else []
    out, passed = [], 0
    for n, q, rep in zip(notes, qs, replies):
        answer = fn(rep.text, list(q.options))
        passed += answer == q.gold
        check = {"check": f"given the note, {template} answers its own question", "answer": answer,
                 "right": answer == q.gold, "output": rep.text}  # fmt: skip
        out.append(dataclasses.replace(n, provenance=(*n.provenance, check)))
    return out, passed


def build_library(
    llm, pool: Sequence[Question], config: NotesConfig, drafts: NotesLibrary | None = None
) -> tuple[NotesLibrary, list, dict]:
    """Active learning end to end, as ``config`` says (NotesConfig, passed whole: its settings have no second
    default here): sample the pool (KMeans into ``clusters``) when ``sample`` is given, answer ``r`` times with
    ``template``, keep the questions wrong every time, write their notes (with the LLM's question type) by
    ``explainer``; ``refine`` refines ``drafts`` (the library read from ``config.drafts``) instead. With ``check``,
    each note is checked (check_notes). (the library, every answer as a record, what it took: pool, error book,
    notes, checked, passed and the calls of each step)."""
    cfg = config
    explainer, r = cfg.explainer, cfg.r
    stats = {"explainer": explainer, "pool": 0, "error_book": 0, "notes": 0, "checked": 0, "passed": 0,
             "calls": {}}  # fmt: skip
    records: list = []
    if explainer == "refine":
        if drafts is None:
            raise DataError("explainer 'refine' needs the experts' drafts (a notes library)")
        notes = refine_drafts(llm, drafts, cfg)
        stats["calls"]["refining drafts"] = len(drafts)
        name = f"{drafts.name}-refined"
    else:
        questions = sample_pool(pool, cfg.sample, k=cfg.clusters, seed=cfg.sample_seed) if cfg.sample else list(pool)
        qtypes = question_types(llm, questions, config.for_stage("question_type"))
        book, wrong, records = error_book(llm, questions, cfg, qtypes=qtypes)
        stats |= {"pool": len(questions), "error_book": len(book)}
        stats["calls"] |= {"question types": len(questions), "error book": len(questions) * r}
        if explainer == "self-correction":
            notes, n = self_correct(llm, book, wrong, cfg, qtypes=qtypes)
            stats["calls"]["self-correction"] = n
        else:
            notes = write_notes(book, wrong, cfg, llm=llm, qtypes=qtypes).notes
            stats["calls"]["writing notes"] = len(book) if explainer == "llm" else 0
        name = f"{book[0].dataset if book else 'empty'}-error-book"
        log.info("active learning: %d pool questions, %d wrong in all %d tries", len(questions), len(book), r)
    if cfg.check:
        notes, passed = check_notes(llm, notes, cfg)
        stats |= {"checked": len(notes), "passed": passed}
        stats["calls"]["checking notes"] = len(notes)
    stats["notes"] = len(notes)
    return NotesLibrary(notes, name=name), records, stats


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
        drafts = NotesLibrary.load(cfg.drafts) if cfg.drafts else None
        library, records, stats = build_library(job.answerer, pool, cfg, drafts)
        extras = NotesExtras(library=LIBRARY, notes=len(library), pool=stats["pool"], error_book=stats["error_book"],
                             checked=stats["checked"], passed=stats["passed"], calls=stats["calls"])  # fmt: skip
        return job.finish(records, OlaGPTRecord, extras, files={LIBRARY: library.text()})
