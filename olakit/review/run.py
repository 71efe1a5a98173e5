"""Run the review loop on questions with a gold answer (AQuA, StrategyQA, E-KAR) or on open questions.

Records (ReviewRecord, per question): loop ``direct`` (one plain answer, iteration 0) and loop ``review-<mode>``
for the answer after each iteration 0 (the first answer) .. max_iterations; the last carries the whole history as
its trace. Answers to
questions with options are read by the strict extractor (two-stage extraction is a setting).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from olakit.data.files import RESOURCES, read_jsonl
from olakit.data.loaders import DEFAULT_SPLIT, load_questions
from olakit.data.records import answer_record, save_records, to_frame
from olakit.errors import DataError
from olakit.extract import extract_strict
from olakit.llm import LLM, Endpoint, Request, Result
from olakit.llm.answerer import Counted
from olakit.llm.client import role_llm
from olakit.llm.two_stage import answers
from olakit.review.config import ReviewConfig
from olakit.review.loop import History, Loop
from olakit.review.parse import states_an_answer
from olakit.runner import calls_failed
from olakit.types import Question, ReviewRecord

OPEN_QUESTIONS = RESOURCES / "review" / "open_questions.jsonl"
DIRECT = "direct"


def ask_text(q: Question) -> str:
    """The question as the loop sees it: with its choices and how to end, for questions with options."""
    if not q.options or q.dataset == "open":
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
                options={"open": "open"},
                gold="open",
            )
        )
    return out


@dataclass
class ReviewResult:
    records: pd.DataFrame
    histories: list
    calls: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    out_dir: Path | None = None


def _questions(cfg: ReviewConfig, ask: str | None) -> list[Question]:
    if ask is not None:
        if not ask.strip():
            raise DataError("an empty question: give the question to answer")
        return [Question(id="ask", dataset="open", text=ask.strip(), options={"open": "open"}, gold="open")]
    if cfg.dataset == "open":
        qs = open_questions()
    else:
        qs = load_questions(cfg.dataset, cfg.split or DEFAULT_SPLIT[cfg.dataset], cfg.data_dir)
    return cfg.pick(qs)


def run_review(
    config: ReviewConfig, llms: dict[str, LLM] | None = None, out_dir: str | Path | None = None, ask: str | None = None
) -> ReviewResult:
    """The loop and the direct answer for every question (or one ``ask``ed open question). ``llms``: role -> LLM
    for ``answerer``, ``reviewer`` and ``direct`` (default: each from its role's environment, else the configured
    endpoint)."""
    cfg = config
    questions = _questions(cfg, ask)
    llms = dict(llms or {})
    if "answerer" not in llms:
        llms["answerer"] = LLM(Endpoint.from_env("answerer"))
    for role in ("reviewer", "direct"):
        if role not in llms:
            llms[role] = role_llm(role, llms["answerer"])
    counters = {role: Counted(llm) for role, llm in llms.items()}
    t0 = time.perf_counter()
    loop = Loop({"answerer": counters["answerer"], "reviewer": counters["reviewer"]}, cfg)
    histories = loop.run([ask_text(q) for q in questions])
    direct = counters["direct"].batch(
        [Request.make(ask_text(q), temperature=0, max_tokens=cfg.direct_tokens) for q in questions],
        "direct answers",
    )
    failed = [r for r in direct if not r.ok]
    if failed:
        raise calls_failed(len(failed), len(direct), "direct answers", failed[0].error)
    records = _records(cfg, questions, histories, direct, counters, llms)
    calls = {role: c.counts for role, c in counters.items()}
    calls["wall_s"] = round(time.perf_counter() - t0, 2)
    df = to_frame(records, ReviewRecord)
    result = ReviewResult(
        records=df,
        histories=histories,
        calls=calls,
        config={**cfg.as_dict(), "roles": {r: llm.endpoint.identity for r, llm in llms.items()}},
    )
    if out_dir is not None:
        result.out_dir = Path(out_dir)
        save_records(df, result.out_dir / "records.parquet")
    return result


def ask_report(result: ReviewResult) -> str:
    """What ``olakit review --ask`` prints: the outline with the step count read from it, each review's score and
    decision, the direct answer the loop is compared with, the loop's final answer, and a note when that final answer
    states no answer (``states_an_answer``)."""
    h = result.histories[0]
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


def _records(cfg, questions, histories, direct, counters, llms) -> list[ReviewRecord]:
    """One record per question for the direct answer and per iteration for the loop's answers, read strictly when
    the question has options (two stages if asked; the second call goes to the answerer role); the last
    iteration's record carries the whole history as its trace."""
    loop = f"review-{cfg.mode}"
    items = [(q, DIRECT, 0, r) for q, r in zip(questions, direct)]
    for q, h in zip(questions, histories):
        items += [(q, loop, i, _as_result(a)) for i, a in enumerate(h.answers)]
    graded = [k for k, (q, *_) in enumerate(items) if q.dataset != "open"]  # open questions have nothing to read
    firsts = [
        (Request.make(ask_text(q), temperature=0, max_tokens=cfg.direct_tokens), res, q.options)
        for q, _, _, res in (items[k] for k in graded)
    ]
    found = dict(zip(graded, answers(firsts, counters["answerer"], stages=cfg.answer_stages, extract=extract_strict)))
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
                model=llms["direct" if name == DIRECT else "answerer"].endpoint.model,
                trace=_trace(h) if name == loop and i == len(h.answers) - 1 else "",
                loop=name,
                iteration=i,
            )
        )
    return out


def _as_result(text: str) -> Result:
    """A loop answer as a first-stage result (the loop's own calls are recorded in the history)."""
    return Result(key="", text=text, finish_reason="stop")
