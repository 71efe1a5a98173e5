"""Run the review loop on questions with a gold answer (AQuA, StrategyQA, E-KAR) or on open questions.

Records (ReviewRecord, per question): loop ``direct`` (one plain answer, iteration 0) and loop ``review-<mode>``
for the answer after each iteration 0 (the first answer) .. max_iterations; the last carries the whole history as
its trace. Answers to
questions with options are read by the strict extractor (two-stage extraction is a setting).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from olakit.answering.extract import extract_text, get_extractor
from olakit.answering.read import read_text
from olakit.answering.second_stage import Answer, answers
from olakit.data.files import RESOURCES, read_jsonl
from olakit.data.loaders import questions_of
from olakit.data.records import answer_record
from olakit.errors import DataError
from olakit.llm import Answerer, Reply, Request
from olakit.llm.judge import parse_grade, reference_request
from olakit.result import Result, ReviewExtras
from olakit.review.config import ReviewConfig
from olakit.review.loop import History, Loop
from olakit.review.parse import states_an_answer
from olakit.runner import Run
from olakit.types import Question, ReviewRecord

OPEN_QUESTIONS = RESOURCES / "review" / "open_questions.jsonl"
DIRECT = "direct"


def ask_text(q: Question) -> str:
    """The question as the loop sees it: with its choices and how to end, for questions with options."""
    if q.kind == "number":
        return f'{q.text}\nEnd with "Answer: N", N a number.'
    if q.kind == "text" and q.gold:  # a reference to score against: the answer stated where the reader finds it
        return f'{q.text}\nEnd with "Answer: " and your answer.'
    if not q.options or q.kind == "text":
        return q.text
    if set(q.options) == {"yes", "no"}:
        return f'{q.text}\nEnd with "So the answer is yes." or "So the answer is no."'
    choices = "\n".join(f"{label}) {text}" for label, text in q.options.items())
    return f'{q.text}\nChoices:\n{choices}\nEnd with "Answer: X", X one of {", ".join(q.options)}.'


def open_questions(path: str | Path = OPEN_QUESTIONS) -> list[Question]:
    """The open-ended questions shipped in data/review/open_questions.jsonl (or a file of the same form)."""
    out = []
    for lineno, obj in read_jsonl(Path(path)):
        if not str(obj.get("question", "")).strip():
            raise DataError(f"{path} line {lineno}: an open question needs a non-empty 'question'")
        out.append(
            Question(
                id=str(obj.get("id", f"open-{lineno}")),
                dataset="open",
                text=obj["question"],
                options={},
                gold="",
                kind="text",
            )
        )
    return out


def _questions(cfg: ReviewConfig, ask: str | None) -> list[Question]:
    if ask is not None:
        if not ask.strip():
            raise DataError("an empty question: give the question to answer")
        return [Question(id="ask", dataset="open", text=ask.strip(), options={}, gold="", kind="text")]
    if cfg.dataset == "open":
        qs = open_questions()
    else:
        qs = questions_of(cfg)
    return cfg.pick(qs)


ROLES = ("answerer", "reviewer", "direct")


def _direct(cfg: ReviewConfig, q: Question) -> Request:
    """The direct answer's call, the one the loop is compared with (its stage ``direct``: greedy, 400 tokens)."""
    return Request.make(ask_text(q), **cfg.for_stage("direct").params())


def run_review(
    config: ReviewConfig,
    llms: Answerer | Mapping[str, Answerer] | None = None,
    ask: str | None = None,
    *,
    parameters: dict | None = None,
    concurrency: int | None = None,
) -> Result:
    """The loop and the direct answer for every question (or one ``ask``ed open question): a Result (records,
    run log with every role's endpoint and calls, the histories in its ReviewExtras). ``llms``: the answerer, or
    role -> answerer for ``answerer``, ``reviewer`` and ``direct`` (default: each from its role's environment, else
    the configured endpoint)."""
    cfg = config
    params = {**(parameters or {}), **({"ask": ask} if ask is not None else {})}
    with Run("review", cfg, llms, kind="review", roles=ROLES, parameters=params, concurrency=concurrency) as job:
        questions = _questions(cfg, ask)
        if cfg.free_text == "judge" and any(q.kind == "text" and q.gold for q in questions):  # asked for
            job.add_role("judge")
        loop = Loop({"answerer": job["answerer"], "reviewer": job["reviewer"]}, cfg)
        histories = loop.run([ask_text(q) for q in questions])
        direct = job["direct"].batch(
            [_direct(cfg, q) for q in questions],
            "direct answers",
        )
        records = _records(cfg, questions, histories, direct, job)
        scored_by = ""
        if any(q.kind == "text" and q.gold for q in questions):
            scored_by = (
                f"judge: {job['judge'].endpoint.model}" if cfg.free_text == "judge" else "exact match (normalised)"
            )
        return job.finish(records, ReviewRecord, ReviewExtras(scored_by=scored_by, histories=histories))


def ask_report(result: Result) -> str:
    """What ``olakit review --ask`` prints: the outline with the step count read from it, each review's score and
    decision, the direct answer the loop is compared with, the loop's final answer, and a note when that final answer
    states no answer (``states_an_answer``)."""
    h = result.extras.histories[0]
    direct = result.records.loc[result.records["loop"] == DIRECT, "raw_output"].iloc[0]
    steps = f"{h.steps} steps" if h.steps else "no step count found: answered in one call"
    lines = [f"outline ({steps}):", h.outline, ""]
    for i, r in enumerate(h.reviews, 1):
        overall = r["scores"]["overall"]
        score = f"overall {overall}" if overall is not None else "no overall score found"
        score += " (cut off at the token limit)" if r.get("cut_off") else ""
        lines.append(f"review {i}: {score} -> {r['decision']}")
    lines += ["", "direct answer (one call, no loop):", direct, ""]
    lines += [f"final answer (after {len(h.reviews)} review{'s' * (len(h.reviews) != 1)}):", h.final]
    if not states_an_answer(h.final):
        lines += ["", "note: the final answer states no answer (it reads as a comment on the answer or the review)"]
    return "\n".join(lines)


def _trace(h: History) -> str:
    return json.dumps(
        {
            "outline": h.outline,
            "steps": h.steps,
            "similar": h.similar,
            "reference": h.reference,
            "answers": h.answers,
            "reviews": h.reviews,
            "stages": h.stages,
        },
        ensure_ascii=False,
    )


def _records(cfg, questions, histories, direct, job: Run) -> list[ReviewRecord]:
    """One record per question for the direct answer and per iteration for the loop's answers, read strictly when
    the question has options (two stages if asked; the second call goes to the answerer role); the last
    iteration's record carries the whole history as its trace."""
    loop = f"review-{cfg.mode}"
    items = [(q, DIRECT, 0, r) for q, r in zip(questions, direct)]
    for q, h in zip(questions, histories):
        items += [(q, loop, i, _as_result(a)) for i, a in enumerate(h.answers)]
    graded = [k for k, (q, *_) in enumerate(items) if q.kind != "text"]  # labels (or numbers) to read
    firsts = [(_direct(cfg, q), res, q.options) for q, _, _, res in (items[k] for k in graded)]
    found = dict(zip(graded, answers(firsts, job["answerer"], cfg, extract=get_extractor("strict"))))
    # a free-text answer with a reference (a dataset file's ``text`` kind): the answer it states, normalised, equal
    # to the reference's (free_text "exact"), or the judge role's verdict ("judge"); an open question (the shipped
    # ones, --ask) has no reference
    scored = [k for k, (q, *_) in enumerate(items) if q.kind == "text" and q.gold]
    verdicts: dict[int, bool] = {}
    for k in scored:
        found[k] = Answer(extract_text(items[k][3].text or "", (), cfg.normalise), 1)
        verdicts[k] = found[k].label == read_text(items[k][0].gold, cfg.normalise).value
    if scored and cfg.free_text == "judge":
        reqs = [
            reference_request(q.text, q.gold, res.text or "", cfg.judge_tokens)
            for q, _, _, res in (items[k] for k in scored)
        ]
        replies = job["judge"].batch(reqs, "judged answers")
        verdicts = {k: parse_grade(r.text) == "yes" for k, r in zip(scored, replies)}
    hist = {q.id: h for q, h in zip(questions, histories)}
    out = []
    for k, (q, name, i, res) in enumerate(items):
        h = hist[q.id]
        out.append(
            answer_record(
                ReviewRecord,
                q,
                ask_text(q),
                res,
                found.get(k),
                model=job["direct" if name == DIRECT else "answerer"].endpoint.model,
                correct=verdicts.get(k),
                trace=_trace(h) if name == loop and i == len(h.answers) - 1 else "",
                loop=name,
                iteration=i,
            )
        )
    return out


def _as_result(text: str) -> Reply:
    """A loop answer as a first-stage result (the loop's own calls are recorded in the history)."""
    return Reply(key="", text=text, finish_reason="stop")
