"""Run a grid live: questions x templates x strategies x n_notes (x SC samples), plus baselines and votes.

``run(RunConfig(dataset="aqua", n_questions=10))`` makes, through the cached client:

1. the question types (intention enhancement);
2. one answer per template, note strategy and n (records named by template; ``origin`` is the turbo baseline,
   so the turbo baseline needs origin among the templates);
3. SC: ``sc_k`` samples of ``sc_template`` at ``sc_temperature`` (records named ``SC``, one per sample);
4. Auto-CoT: demos from the clustered split, then one answer per question (records named ``auto_cot``);
5. the LLM vote over the templates' answers, in template order (``llm_vote``) and, for the audit, in a
   seeded shuffled order (``llm_vote_shuffled``).

Every distinct prompt is one cached call, so a rerun after a crash makes only the calls still missing.
Records are written only when every call succeeded (a failed call raises RunError; rerun to retry it).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pandas as pd

from olakit import analysis
from olakit.controller import Call, plan
from olakit.data import load_questions
from olakit.errors import DataError, OlakitError
from olakit.extract import get_extractor
from olakit.intent import frame, question_types
from olakit.llm import LLM, Request, Result, cache_key
from olakit.notes import NotesLibrary, olagpt_ekar_library, olagpt_library
from olakit.records import prompt_hash, save_records, to_frame
from olakit.templates import templates_for
from olakit.types import Record
from olakit.vote import llm_vote_records

log = logging.getLogger("olakit")
BASELINE_NAMES = ("turbo", "SC", "auto_cot")
VOTE_NAMES = ("regex", "llm")
DEFAULT_SPLIT = {"aqua": "test", "ekar_zh": "validation", "strategyqa": "dev"}


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
    """Default: every template that suits the dataset (origin, DT, DST, PT, ST; AT too for E-KAR)."""
    strategies: Sequence[str] = ("zero-shot", "random", "retrieval", "combine")
    n_notes: Sequence[int] = (3,)
    library: str | None = "olagpt"
    """A notes library file (JSON Lines), "olagpt" (the authors' 81 AQuA notes) or "olagpt-ekar" (their 2 E-KAR
    notes)."""
    baselines: Sequence[str] = BASELINE_NAMES
    votes: Sequence[str] = VOTE_NAMES
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

    def check(self) -> "RunConfig":
        unknown = [b for b in self.baselines if b not in BASELINE_NAMES]
        if unknown:
            raise DataError(f"unknown baselines {unknown}; known: {list(BASELINE_NAMES)}")
        unknown = [v for v in self.votes if v not in VOTE_NAMES]
        if unknown:
            raise DataError(f"unknown votes {unknown}; known: {list(VOTE_NAMES)}")
        if any(n < 0 for n in self.n_notes) or not self.n_notes:
            raise DataError(f"n_notes {list(self.n_notes)}: give one or more counts >= 0")
        if self.autocot_demos not in ("generated", "published"):
            raise DataError(f"autocot_demos {self.autocot_demos!r}: use 'generated' or 'published'")
        get_extractor(self.extractor)
        return self


@dataclass
class RunResult:
    records: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    stats: dict = field(default_factory=dict)
    out_dir: Path | None = None


def _batch(llm: LLM, requests: Sequence[Request], desc: str, stats: dict) -> dict[str, Result]:
    """Results by cache key, each distinct request sent once."""
    unique: dict[str, Request] = {}
    for r in requests:
        unique.setdefault(cache_key(llm.endpoint.identity, r), r)
    results = llm.batch(list(unique.values()), desc=desc)
    for r in results:
        stats["unique_prompts"] += 1
        stats["paid"] += int(r.ok and not r.cached)
        stats["cached"] += int(r.cached)
        stats["failed"] += int(not r.ok)
        stats["prompt_tokens"] += r.prompt_tokens or 0
        stats["completion_tokens"] += r.completion_tokens or 0
        stats["cost"] += r.cost or 0.0
    stats["requests"] += len(requests)
    return dict(zip(unique, results))


def _record(call: Call, result: Result, model: str, extract, prompt: str) -> Record:
    q = call.question
    extracted = extract(result.text, list(q.options))
    return Record(dataset=q.dataset, question_id=q.id, template=call.template, notes_strategy=call.notes_strategy,
                  n_notes=call.n_notes, sample=call.sample, model=model, prompt_hash=prompt_hash(prompt),
                  raw_output=result.text or "", extracted=extracted, gold=q.gold, correct=extracted == q.gold,
                  prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens, cost=result.cost,
                  latency=result.latency, cached=result.cached, source="live", note_ids=call.note_ids,
                  note_sims=call.note_sims, question_type=call.question_type)


def _fail_if_any(stats: dict) -> None:
    if stats["failed"]:
        raise RunError(f"{stats['failed']} of {stats['unique_prompts']} calls failed after retries; nothing was "
                       "written. Rerun: the answers already received are cached and only the failed calls are made")


def resolve_library(spec: str | None, data_dir=None) -> NotesLibrary | None:
    if spec is None:
        return None
    if spec == "olagpt":
        return olagpt_library(data_dir)
    if spec == "olagpt-ekar":
        return olagpt_ekar_library(data_dir)
    return NotesLibrary.load(spec)


def run(config: RunConfig, llm: LLM | None = None, out_dir: str | Path | None = None) -> RunResult:
    """Run the grid; write records.parquet and tables/*.csv into out_dir when given."""
    from olakit.baselines import auto_cot_demos, cot_prompt, published_demos

    cfg = config.check()
    t0 = time.perf_counter()
    split = cfg.split or DEFAULT_SPLIT.get(cfg.dataset, "test")
    everything = load_questions(cfg.dataset, split, data_dir=cfg.data_dir)
    end = None if cfg.n_questions is None else cfg.offset + cfg.n_questions
    questions = everything[cfg.offset:end]
    if not questions:
        raise DataError(f"{cfg.dataset}/{split}: no questions at offset {cfg.offset}")
    templates = templates_for(cfg.dataset, cfg.templates)
    if "turbo" in cfg.baselines and "origin" not in [t.name for t in templates]:
        raise DataError("the turbo baseline is the origin template at temperature 0: add 'origin' to the templates "
                        "or leave 'turbo' out of the baselines")
    needs_notes = any(s != "zero-shot" for s in cfg.strategies)
    library = resolve_library(cfg.library, cfg.data_dir) if needs_notes else None
    if needs_notes and library is None:
        raise DataError("note strategies other than zero-shot need a notes library (config.library)")
    llm = llm or LLM()
    model = llm.endpoint.model
    extract = get_extractor(cfg.extractor)
    stats = dict.fromkeys(["requests", "unique_prompts", "paid", "cached", "failed", "prompt_tokens",
                           "completion_tokens"], 0)
    stats["cost"] = 0.0

    counted = lambda reqs, desc: list(_batch(llm, reqs, desc, stats).values())  # noqa: E731 (requests are unique)
    qtypes = question_types(llm, questions, batch=counted)
    calls = plan(questions, qtypes, templates, cfg.strategies, cfg.n_notes, library, seed=cfg.seed,
                 max_tokens=cfg.max_tokens)
    if "SC" in cfg.baselines:
        sc_t = templates_for(cfg.dataset, [cfg.sc_template])
        calls += plan(questions, qtypes, sc_t, cfg.strategies, cfg.n_notes, library, samples=cfg.sc_k,
                      seed=cfg.seed, temperature=cfg.sc_temperature, max_tokens=cfg.max_tokens, name="SC")
    if "auto_cot" in cfg.baselines:
        if cfg.autocot_demos == "published":
            demos = published_demos(cfg.dataset, cfg.data_dir)
        else:
            demos = auto_cot_demos(llm, everything, k=cfg.autocot_k, seed=cfg.seed, max_tokens=cfg.max_tokens,
                                   batch=counted)
        for q in questions:
            own = [d for d in demos if d.question_id != q.id]  # never a question's own demo
            prompt = cot_prompt(own, frame(q, qtypes[q.id]))
            calls.append(Call(q, "auto_cot", "zero-shot", 0, 0, Request.make(prompt, temperature=0,
                              max_tokens=cfg.max_tokens), prompt, (), (), qtypes[q.id]))
    results = _batch(llm, [c.request for c in calls], "answers", stats)
    records = [_record(c, results[cache_key(llm.endpoint.identity, c.request)], model, extract, c.prompt)
               for c in calls if results[cache_key(llm.endpoint.identity, c.request)].ok]

    _fail_if_any(stats)
    if "llm" in cfg.votes:
        questions_by_id = {q.id: q for q in questions}
        records += llm_vote_records(llm, to_frame(records), questions_by_id, [t.name for t in templates],
                                    audit=cfg.audit, seed=cfg.seed, max_tokens=cfg.vote_max_tokens,
                                    extractor=cfg.extractor,
                                    batch=lambda reqs, desc: _batch(llm, reqs, desc, stats))
    stats["wall_s"] = round(time.perf_counter() - t0, 2)
    _fail_if_any(stats)
    df = to_frame(records)
    tables = run_tables(df, [t.name for t in templates], tie=cfg.tie, seed=cfg.seed)
    result = RunResult(records=df, tables=tables, stats=stats)
    if out_dir is not None:
        out = Path(out_dir)
        save_records(df, out / "records.parquet")
        from olakit.reproduce import write_tables

        write_tables(tables, out)
        result.out_dir = out
    log.info("run %s: %s", cfg.dataset, stats)
    return result


def run_tables(df: pd.DataFrame, templates: Sequence[str], tie: str = "first", seed: int = 0,
               n_boot: int = 2000) -> dict[str, pd.DataFrame]:
    """The foundation tables over the templates, plus every method's accuracy (templates, regex vote, LLM vote,
    SC, Auto-CoT) with CIs, the LLM-vote audit and usage per method."""
    from olakit.reproduce import compute_tables
    from olakit.vote import llm_vote_audit

    present = [t for t in templates if t in set(df["template"])]
    base = df[df["template"].isin(present) & (df["sample"] == 0)]
    tables = compute_tables(_label_n(base), tie=tie, seed=seed, n_boot=n_boot) if present else {}
    tables["methods"] = analysis.method_accuracy(_label_n(df), present, tie=tie, seed=seed, n_boot=n_boot)
    tables["methods_wide"] = analysis.accuracy_wide(tables["methods"])
    if {"llm_vote", "llm_vote_shuffled"} <= set(df["template"]):
        tables["llm_vote_audit"] = llm_vote_audit(_label_n(df), present, tie=tie)
    tables["usage"] = analysis.usage_table(df)
    return tables


def _label_n(df: pd.DataFrame) -> pd.DataFrame:
    """With several note counts, name strategies "retrieval n=3" so tables keep them apart."""
    if df.loc[df["notes_strategy"] != "zero-shot", "n_notes"].nunique() <= 1:
        return df
    out = df.copy()
    mask = out["notes_strategy"] != "zero-shot"
    out.loc[mask, "notes_strategy"] = out.loc[mask, "notes_strategy"] + " n=" + out.loc[mask, "n_notes"].astype(str)
    return out
