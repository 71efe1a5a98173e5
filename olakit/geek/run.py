"""Run GEEK's Table-2 rows on StrategyQA: one record per question and row, with the whole trace.

``run_geek(GeekConfig(n_questions=3, rows=("zero-shot", "+RE")))`` makes every call through the cached client (so
calls = unique prompts, and a killed run resumes paying only what is missing), extracts yes/no strictly from each
final answer (unparsed counts wrong; two-stage extraction is a setting), takes the majority over branches for Full,
and reports recall@k of the retriever in the oracle setting.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable

from olakit.answering.extract import get_extractor
from olakit.answering.majority import majority
from olakit.answering.second_stage import Answer, answers
from olakit.data.loaders import questions_of
from olakit.data.records import answer_record
from olakit.errors import DataError
from olakit.geek import prompts
from olakit.geek.actions import RETRIEVE, ROWS
from olakit.geek.agent import Engine, Trace, start
from olakit.geek.config import GeekConfig
from olakit.geek.retrievers import recall_at_k
from olakit.llm import Answerer
from olakit.registration import Registered
from olakit.result import GeekExtras, Result
from olakit.retrieval.knowledge import load_corpus
from olakit.retrieval.retrievers import make_retriever
from olakit.rng import keyed_rng
from olakit.runner import Run
from olakit.types import GeekRecord

log = logging.getLogger("olakit")
LABELS = ["yes", "no"]


def _record(q, row: str, branches: tuple[Trace], found: tuple, cfg: GeekConfig, setting: str, model: str):
    labels = [a.label for a in found]
    counts = Counter(x for x in labels if x is not None).most_common()
    tie = len(counts) > 1 and counts[0][1] == counts[1][1]
    rng = keyed_rng(cfg.analysis_seed, "geek-branch-tie", q.id)
    label = majority(labels, cfg.tie, rng) if len(labels) > 1 else labels[0]
    first = next((t for t, a in zip(branches, found) if a.label == label), branches[0])
    calls = {id(r): r for t in branches for r in t.results}.values()  # a shared prefix counts once
    calls = list(calls) + [a.second for a in found if a.second is not None]
    trace = {
        "row": row,
        "answer": label,
        "answer_branch": first.branch if label is not None else None,
        "tie": tie,
        "branches": [
            {
                "branch": t.branch,
                "answer": a.label,
                "answer_stage": a.stage,
                "forced_final": t.forced,
                "fallbacks": t.fallbacks,
                "state": t.state.render(),
                "chain": [[s.sub_question, s.fact, s.source] for s in t.state.steps],
                "steps": t.steps,
            }
            for t, a in zip(branches, found)
        ],
    }
    retrieves = RETRIEVE in ROWS[row]
    return answer_record(
        GeekRecord,
        q,
        first.final_request.message_dicts()[-1]["content"],
        first.final_result,
        Answer(label, max(a.stage for a in found)),
        model=model,
        calls=calls,
        trace=json.dumps(trace, ensure_ascii=False),
        row=row,
        corpus=setting,
        retriever=cfg.retriever if retrieves else "",
        k=cfg.k if retrieves else 0,
    )


def run_geek(
    config: GeekConfig,
    llm: Answerer | None = None,
    *,
    parameters: dict | None = None,
    registration: Registered | None = None,
    concurrency: int | None = None,
    batch: bool | None = None,
    export: str | None = None,
    announce: Callable[[Run], None] | None = None,
) -> Result:
    """Every row of the config on the slice: a Result (records with traces, run log, GeekExtras: recall@k and the
    corpus label). ``llm``: the core model's answerer (default: the configured endpoint, with ``concurrency``,
    ``batch`` and ``export`` as olakit.runner.Run takes them). ``registration``: a pre-registered family of row
    comparisons, read before this call. ``announce(job)``: called before the first call."""
    door = dict(parameters=parameters, concurrency=concurrency, batch=batch, export=export, registration=registration)
    with Run("geek", config, llm, kind="geek", **door) as job:
        if registration is not None:
            registration.check_cells(list(config.rows))
        if announce is not None:
            announce(job)
        return _run(config, job)


def _run(config: GeekConfig, job: Run) -> Result:
    cfg = config
    everything = questions_of(cfg)
    not_yes_no = [q.id for q in everything if q.kind != "yes_no"]
    if not_yes_no:
        raise DataError(f"dataset {cfg.dataset}: GEEK answers yes/no questions; {not_yes_no[0]} is not one")
    questions = cfg.pick(everything)
    prompts.check_no_leak(everything)
    needs_corpus = any(RETRIEVE in ROWS[r] for r in cfg.rows)
    corpus = load_corpus(cfg.corpus, cfg.data_dir, everything)
    retriever = make_retriever(cfg.retriever, corpus) if needs_corpus else None
    if needs_corpus and cfg.k > len(corpus):
        raise DataError(f"k = {cfg.k}: the corpus {corpus.name!r} has {len(corpus)} paragraphs")
    recall = {}
    if retriever is not None and any(corpus.owner):
        oracle_spec = f"{cfg.corpus.rsplit(':', 1)[0]}:oracle"
        oracle = make_retriever(cfg.retriever, load_corpus(oracle_spec, cfg.data_dir, everything))
        ks = [k for k in cfg.recall_ks if k <= len(corpus)]  # a small corpus (a file's own facts) has fewer
        recall = {f"recall@{k}": round(recall_at_k(oracle, questions, k), 4) for k in ks}
    counter = job.answerer
    engine = Engine(counter, cfg, retriever, corpus, prompts.normalised(everything))
    progress = getattr(job.models["answerer"], "progress", False)
    records = []
    for row in cfg.rows:
        traces = engine.run(start(questions, row), desc=f"GEEK {row}", progress=progress)
        found = answers(
            [(t.final_request, t.final_result, LABELS) for t in traces],
            counter,
            cfg,
            extract=get_extractor("strict"),
        )
        by_q: dict[str, list] = {}
        for t, a in zip(traces, found):
            by_q.setdefault(t.question.id, []).append((t, a))
        for q in questions:
            pairs = sorted(by_q[q.id], key=lambda p: p[0].branch)
            records.append(_record(q, row, *zip(*pairs), cfg, corpus.setting, counter.endpoint.model))
    result = job.finish(records, GeekRecord, GeekExtras(recall=recall, corpus=corpus.label))
    log.debug("GEEK %s: %s; %s", corpus.label, result.calls, recall)  # the caller reports them
    return result
