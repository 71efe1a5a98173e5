"""Run the review loop on questions with a gold answer (AQuA, StrategyQA, E-KAR) or on open questions.

Records (one per question): ``direct`` (one plain answer) and ``review-<mode>@<i>`` for the answer after each
iteration i = 0 (the first answer) .. max_iterations; the last carries the whole history as its trace. Answers to
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
from olakit.data.records import prompt_hash, save_records, to_frame
from olakit.errors import DataError
from olakit.extract import extract_strict, unparsed_cause
from olakit.llm import LLM, Endpoint, Request, Result
from olakit.llm.answerer import Counted
from olakit.llm.two_stage import answers
from olakit.review.config import ReviewConfig
from olakit.review.loop import History, Loop
from olakit.runner import calls_failed
from olakit.types import Question, Record

OPEN_QUESTIONS = RESOURCES / "review" / "open_questions.jsonl"
DIRECT = "direct"


def method_name(mode: str, iteration: int) -> str:
    """``method_name("lite", 2) -> "review-lite@2"``: the answer after iteration 2."""
    return f"review-{mode}@{iteration}"


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
            own = Endpoint.from_env(role)
            llms[role] = llms["answerer"] if own.identity == llms["answerer"].endpoint.identity else LLM(own)
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
    records = []
    graded = [q for q in questions if q.dataset != "open"]
    if graded:
        records = _graded_records(cfg, questions, histories, direct, counters, llms)
    else:
        records = [
            _record(q, DIRECT, r.text or "", None, 1, llms["direct"].endpoint.model, "")
            for q, r in zip(questions, direct)
        ]
        for q, h in zip(questions, histories):
            for i, text in enumerate(h.answers):
                trace = _trace(h) if i == len(h.answers) - 1 else ""
                records.append(
                    _record(q, method_name(cfg.mode, i), text, None, 1, llms["answerer"].endpoint.model, trace)
                )
    calls = {role: c.counts for role, c in counters.items()}
    calls["wall_s"] = round(time.perf_counter() - t0, 2)
    df = to_frame(records)
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


def _record(q: Question, method: str, text: str, answer, stage: int, model: str, trace: str, result=None) -> Record:
    label = answer.label if answer is not None else None
    return Record(
        dataset=q.dataset,
        question_id=q.id,
        template=method,
        notes_strategy="review",
        n_notes=0,
        sample=0,
        model=model,
        prompt_hash=prompt_hash(ask_text(q)),
        prompt_chars=len(ask_text(q)),
        raw_output=text,
        extracted=label,
        gold=q.gold,
        correct=label == q.gold and label is not None,
        prompt_tokens=getattr(result, "prompt_tokens", None),
        completion_tokens=getattr(result, "completion_tokens", None),
        cost=getattr(result, "cost", None),
        answer_stage=stage,
        unparsed_cause="" if label is not None or q.dataset == "open" else unparsed_cause(text, list(q.options)),
        source="live",
        trace=trace,
    )


def _graded_records(cfg, questions, histories, direct, counters, llms) -> list[Record]:
    """Records with extracted answers: every iteration's answer and the direct one, read strictly (two stages if
    asked; the second call goes to the role that wrote the answer)."""
    texts: list[tuple[Question, str, str, object]] = [(q, DIRECT, r.text or "", r) for q, r in zip(questions, direct)]
    for q, h in zip(questions, histories):
        texts += [(q, method_name(cfg.mode, i), a, None) for i, a in enumerate(h.answers)]
    firsts = []
    for q, _, text, res in texts:
        req = Request.make(ask_text(q), temperature=0, max_tokens=cfg.direct_tokens)
        from_result = res if res is not None else _as_result(text)
        firsts.append((req, from_result, q.options))
    found = answers(firsts, counters["answerer"], stages=cfg.answer_stages, extract=extract_strict)
    last = {q.id: len(h.answers) - 1 for q, h in zip(questions, histories)}
    hist = {q.id: h for q, h in zip(questions, histories)}
    out = []
    for (q, method, text, res), a in zip(texts, found):
        model = llms["direct" if method == DIRECT else "answerer"].endpoint.model
        trace = _trace(hist[q.id]) if method == method_name(cfg.mode, last[q.id]) else ""
        out.append(_record(q, method, text, a, a.stage, model, trace, res))
    return out


def _as_result(text: str) -> Result:
    """A loop answer as a first-stage result (the loop's own calls are recorded in the history)."""
    return Result(key="", text=text, finish_reason="stop")
