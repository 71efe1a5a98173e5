"""Run a grid live: questions x templates x strategies x n_notes (x SC samples), plus baselines and votes.

``run(RunConfig(dataset="aqua", n_questions=10))`` makes, through the cached client:

1. the question types (intention enhancement);
2. one answer per template, note strategy and n (records named by template; the ``turbo`` template, the plain
   prompt, is the paper's turbo baseline);
3. SC: ``sc_k`` samples of ``sc_template`` at ``sc_temperature`` (records named ``SC``, one per sample);
4. Auto-CoT: demos from the clustered split, then one answer per question (records named ``auto_cot``);
5. the LLM vote over the templates' answers, in template order (``llm_vote``) and, for the audit, in a
   seeded shuffled order (``llm_vote_shuffled``).

Every distinct prompt is one cached call, so a rerun after a crash makes only the calls still missing.
Records are written only when every call succeeded (a failed call raises RunError; rerun to retry it). The tables
over the records are olakit.analysis.tables.run_tables (the runner makes calls, the analysis layer reads records).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from olakit.data.loaders import DEFAULT_SPLIT, load_questions
from olakit.data.records import prompt_hash, save_records, to_frame
from olakit.errors import DataError, OlakitError
from olakit.extract import get_extractor
from olakit.llm import LLM, Request, Result, cache_key
from olakit.names import AUTO_COT, LLM_VOTE, SC, STRATEGIES, VOTES, ZERO_SHOT
from olakit.olagpt.baselines import auto_cot_demos, cot_prompt, published_demos
from olakit.olagpt.controller import Call, plan
from olakit.olagpt.intent import frame_question, question_types
from olakit.olagpt.llm_vote import llm_vote_records
from olakit.olagpt.notes import resolve_library
from olakit.olagpt.templates import templates_for
from olakit.types import Record

log = logging.getLogger("olakit")
BASELINE_NAMES = (SC, AUTO_COT)
"""Baselines beside the templates (the turbo baseline is the ``turbo`` template itself)."""


class RunError(OlakitError):
    """Some calls of a run failed; the message says how many and that a rerun retries only those."""


@dataclass
class RunConfig:
    """What to run. Names are looked up in registries: templates, note strategies, votes, baselines."""

    dataset: str = "aqua"
    split: str | None = None
    """Default: test (AQuA), validation (E-KAR), dev (StrategyQA)."""
    n_questions: int | None = 10
    offset: int = 0
    templates: Sequence[str] | None = None
    """Default: every template that suits the dataset (turbo, DT, DST, PT, ST; AT too for E-KAR)."""
    strategies: Sequence[str] = STRATEGIES
    n_notes: Sequence[int] = (3,)
    library: str | None = "olagpt"
    """A notes library file (JSON Lines), "olagpt" (the authors' 81 AQuA notes) or "olagpt-ekar" (their 2 E-KAR
    notes)."""
    baselines: Sequence[str] = BASELINE_NAMES
    votes: Sequence[str] = VOTES
    sc_k: int = 3
    sc_template: str = "ST"
    sc_temperature: float = 0.7
    autocot_k: int = 4
    autocot_demos: str = "generated"
    """"generated" (Auto-CoT's clustering on the split) or "published" (AuRoRA's AQuA/StrategyQA demos)."""
    max_tokens: int = 256
    vote_max_tokens: int = 192
    audit: bool = True
    seed: int = 0
    extractor: str = "strict"
    tie: str = "first"
    data_dir: str | None = None

    def check(self) -> RunConfig:
        unknown = [b for b in self.baselines if b not in BASELINE_NAMES]
        if unknown:
            raise DataError(f"unknown baselines {unknown}; known: {list(BASELINE_NAMES)}")
        unknown = [v for v in self.votes if v not in VOTES]
        if unknown:
            raise DataError(f"unknown votes {unknown}; known: {list(VOTES)}")
        if any(n < 0 for n in self.n_notes) or not self.n_notes:
            raise DataError(f"n_notes {list(self.n_notes)}: give one or more counts >= 0")
        if self.autocot_demos not in ("generated", "published"):
            raise DataError(f"autocot_demos {self.autocot_demos!r}: use 'generated' or 'published'")
        get_extractor(self.extractor)
        return self


@dataclass
class RunResult:
    """The records of a run and its call counts (requests, unique prompts, paid, cached, failed, tokens, cost)."""

    records: pd.DataFrame
    calls: dict = field(default_factory=dict)
    out_dir: Path | None = None


def _batch(llm: LLM, requests: Sequence[Request], desc: str, counts: dict) -> dict[str, Result]:
    """Results by cache key, each distinct request sent once."""
    unique: dict[str, Request] = {}
    for r in requests:
        unique.setdefault(cache_key(llm.endpoint.identity, r), r)
    results = llm.batch(list(unique.values()), desc=desc)
    for r in results:
        counts["unique_prompts"] += 1
        counts["paid"] += int(r.ok and not r.cached)
        counts["cached"] += int(r.cached)
        counts["failed"] += int(not r.ok)
        counts["prompt_tokens"] += r.prompt_tokens or 0
        counts["completion_tokens"] += r.completion_tokens or 0
        counts["cost"] += r.cost or 0.0
    counts["requests"] += len(requests)
    return dict(zip(unique, results))


def _record(call: Call, result: Result, model: str, extract, prompt: str) -> Record:
    q = call.question
    extracted = extract(result.text, list(q.options))
    return Record(
        dataset=q.dataset,
        question_id=q.id,
        template=call.template,
        notes_strategy=call.notes_strategy,
        n_notes=call.n_notes,
        sample=call.sample,
        model=model,
        prompt_hash=prompt_hash(prompt),
        prompt_chars=len(prompt),
        raw_output=result.text or "",
        extracted=extracted,
        gold=q.gold,
        correct=extracted == q.gold,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        cost=result.cost,
        latency=result.latency,
        cached=result.cached,
        source="live",
        note_ids=call.note_ids,
        note_sims=call.note_sims,
        question_type=call.question_type,
    )


def _fail_if_any(counts: dict) -> None:
    if counts["failed"]:
        raise RunError(
            f"{counts['failed']} of {counts['unique_prompts']} calls failed after retries; nothing was "
            "written. Rerun: the answers already received are cached and only the failed calls are made"
        )


def run(config: RunConfig, llm: LLM | None = None, out_dir: str | Path | None = None) -> RunResult:
    """Run the grid; write records.parquet into out_dir when given."""
    cfg = config.check()
    t0 = time.perf_counter()
    split = cfg.split or DEFAULT_SPLIT.get(cfg.dataset, "test")
    everything = load_questions(cfg.dataset, split, data_dir=cfg.data_dir)
    end = None if cfg.n_questions is None else cfg.offset + cfg.n_questions
    questions = everything[cfg.offset : end]
    if not questions:
        raise DataError(f"{cfg.dataset}/{split}: no questions at offset {cfg.offset}")
    templates = templates_for(cfg.dataset, cfg.templates)
    needs_notes = any(s != ZERO_SHOT for s in cfg.strategies)
    library = resolve_library(cfg.library, cfg.data_dir) if needs_notes else None
    if needs_notes and library is None:
        raise DataError("note strategies other than zero-shot need a notes library (config.library)")
    llm = llm or LLM()
    model = llm.endpoint.model
    extract = get_extractor(cfg.extractor)
    counts = dict.fromkeys(
        ["requests", "unique_prompts", "paid", "cached", "failed", "prompt_tokens", "completion_tokens"], 0
    )
    counts["cost"] = 0.0

    counted = lambda reqs, desc: list(_batch(llm, reqs, desc, counts).values())  # noqa: E731 (requests are unique)
    qtypes = question_types(llm, questions, batch=counted)
    calls = plan(
        questions, qtypes, templates, cfg.strategies, cfg.n_notes, library, seed=cfg.seed, max_tokens=cfg.max_tokens
    )
    if SC in cfg.baselines:
        sc_t = templates_for(cfg.dataset, [cfg.sc_template])
        calls += plan(
            questions,
            qtypes,
            sc_t,
            cfg.strategies,
            cfg.n_notes,
            library,
            samples=cfg.sc_k,
            seed=cfg.seed,
            temperature=cfg.sc_temperature,
            max_tokens=cfg.max_tokens,
            name=SC,
        )
    if AUTO_COT in cfg.baselines:
        if cfg.autocot_demos == "published":
            demos = published_demos(cfg.dataset, cfg.data_dir)
        else:
            demos = auto_cot_demos(
                llm, everything, k=cfg.autocot_k, seed=cfg.seed, max_tokens=cfg.max_tokens, batch=counted
            )
        for q in questions:
            own = [d for d in demos if d.question_id != q.id]  # never a question's own demo
            prompt = cot_prompt(own, frame_question(q, qtypes[q.id]))
            calls.append(
                Call(
                    q,
                    AUTO_COT,
                    ZERO_SHOT,
                    0,
                    0,
                    Request.make(prompt, temperature=0, max_tokens=cfg.max_tokens),
                    prompt,
                    (),
                    (),
                    qtypes[q.id],
                )
            )
    results = _batch(llm, [c.request for c in calls], "answers", counts)
    records = [
        _record(c, results[cache_key(llm.endpoint.identity, c.request)], model, extract, c.prompt)
        for c in calls
        if results[cache_key(llm.endpoint.identity, c.request)].ok
    ]

    _fail_if_any(counts)
    if LLM_VOTE in cfg.votes:
        questions_by_id = {q.id: q for q in questions}
        records += llm_vote_records(
            llm,
            to_frame(records),
            questions_by_id,
            [t.name for t in templates],
            audit=cfg.audit,
            seed=cfg.seed,
            max_tokens=cfg.vote_max_tokens,
            extractor=cfg.extractor,
            batch=lambda reqs, desc: _batch(llm, reqs, desc, counts),
        )
    counts["wall_s"] = round(time.perf_counter() - t0, 2)
    _fail_if_any(counts)
    df = to_frame(records)
    result = RunResult(records=df, calls=counts)
    if out_dir is not None:
        result.out_dir = Path(out_dir)
        save_records(df, result.out_dir / "records.parquet")
    log.info("run %s: %s", cfg.dataset, counts)
    return result
