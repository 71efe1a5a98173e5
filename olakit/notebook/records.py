"""Records for the notebooks: the OlaGPT recorded outputs or a live OlaGPT run (``get_records``), GEEK's rows
(``geek_records``) and their OlaGPT cross-method row, the review loop (``review_records``, ``open_judgement``),
and an LLM vote over recorded answers (``add_llm_vote``). Each takes its method's config whole and returns the
records and their run log (olakit.runlog.RunLog); calls made for another part of the same result (a judge, a vote,
a second run) are that log's parts. Every call goes through a run (olakit.runner), so a failed one is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from olakit.analysis.intervals import verdict_shares
from olakit.analysis.tables import method_accuracy
from olakit.analysis.traces import judge_table
from olakit.data.datasets import check_versions
from olakit.data.loaders import questions_of
from olakit.data.recorded import RECORDED_MODEL, RECORDED_SOURCE, RECORDED_TEMPLATES, import_olagpt
from olakit.data.records import to_frame
from olakit.errors import DataError
from olakit.geek.assessment import assess
from olakit.geek.config import GeekConfig
from olakit.geek.corpus import parse_spec
from olakit.geek.run import run_geek
from olakit.llm.judge import judge_pairs
from olakit.names import LLM_VOTE, LLM_VOTE_SHUFFLED, REGEX_VOTE, ZERO_SHOT, setting_label, voting_templates
from olakit.olagpt.config import OlaGPTConfig
from olakit.olagpt.llm_vote import llm_vote_records
from olakit.olagpt.run import run
from olakit.registration import logged
from olakit.review.config import ReviewConfig
from olakit.review.run import run_review
from olakit.runlog import RunLog, make_log, records_summary
from olakit.runner import Run


def get_records(source: str, config: OlaGPTConfig, *, concurrency: int | None = None, registration: dict | None = None):
    """(records, template names in vote order, run log) from the OlaGPT recorded outputs or a live run of ``config``;
    ``registration``: the entry of a pre-registered family (olakit.registration.read_registration, read before
    this call), in the run log (a live run: from before its first call).

    ``source``: ``"recorded"`` (AQuA only: the authors' gpt-3.5 outputs, read with the config's reader; n_notes 3,
    and for ST also 1 and 5; with all five templates and an LLM vote asked for, the authors' recorded LLM vote) or
    ``"live"`` (the endpoint from the environment, or the embedded model).
    """
    cfg = config
    if source == "recorded":
        if cfg.dataset != "aqua":
            raise DataError(f"recorded outputs exist for AQuA only, not {cfg.dataset!r}; use source='live'")
        names = list(cfg.templates) if cfg.templates else RECORDED_TEMPLATES
        unknown = sorted(set(names) - set(RECORDED_TEMPLATES))
        if unknown:
            raise DataError(f"templates {unknown} are not in the recorded outputs; recorded: {RECORDED_TEMPLATES}")
        parts = ["templates"]
        if LLM_VOTE in cfg.votes and set(names) == set(RECORDED_TEMPLATES):
            parts.append("llm_vote")
        if "ST" in names and {1, 5} & set(cfg.n_notes):
            parts.append("st_notes_count")
        df = import_olagpt(cfg.data_dir, extractor=cfg.reader(recorded=True), parts=parts)
        df = df[df["template"].isin([*names, LLM_VOTE]) & df["notes_strategy"].isin(cfg.strategies)]
        df = df[df["n_notes"].isin({0, *cfg.n_notes})]
        keep = cfg.pick(list(dict.fromkeys(df["question_id"])))
        df = df[df["question_id"].isin(keep)].reset_index(drop=True)
        extra = {"source": RECORDED_SOURCE, "model": RECORDED_MODEL, "n_notes": sorted({int(n) for n in df["n_notes"]})}
        if registration is not None:
            extra["registration"] = logged(registration)
        log = make_log("recorded", cfg, outputs={"records": records_summary(df)}, extra=extra)
        return df, cfg.order(names), log
    if source == "live":
        res = run(cfg, parameters={"concurrency": concurrency} if concurrency else None, registration=registration)
        return res.records, cfg.order(voting_templates(res.records["template"])), res.log
    raise DataError(f"source {source!r}: use 'recorded' or 'live'")


def geek_records(
    config: GeekConfig, *, judge_questions: int = 0, concurrency: int | None = None, registration: dict | None = None
):
    """GEEK's rows live (olakit.geek.run): (records with traces, run log with recall@k and the corpus label in
    ``extra``; with ``judge_questions``, the pairwise judge's Table 3 in ``extra["judge"]`` and its calls as the
    part ``judge``; with ``registration``, its entry, from before the first call)."""
    cfg = config
    res = run_geek(cfg, parameters={"concurrency": concurrency} if concurrency else None, registration=registration)
    log = res.log
    if judge_questions:
        questions = {q.id: q for q in questions_of(cfg)}
        first = list(dict.fromkeys(res.records["question_id"]))[:judge_questions]
        row = "Full" if "Full" in cfg.rows else cfg.rows[-1]
        with Run("geek judge", cfg, roles=("judge",)) as job:  # the judge role's endpoint, else the core model's
            judged = res.records[res.records["question_id"].isin(first)]
            verdicts = judge_table(assess(job["judge"], judged, questions, row), row, cfg)
            judge_log = job.log()
        verdicts["model"] = judge_log.roles["judge"]["model"]
        verdicts["judge_is_core_model"] = judge_log.roles["judge"]["identity"] == log.roles["answerer"]["identity"]
        log = log.replace(extra={**log.extra, "judge": verdicts}).with_part("judge", judge_log)
    return res.records, log


def olagpt_vote_row(config: GeekConfig, log: RunLog) -> tuple[pd.DataFrame, RunLog]:
    """The cross-method row: OlaGPT's templates answer the same StrategyQA questions zero-shot, and their regex vote
    (the authors' vote rule, the GEEK config's statistics) is one row of accuracy with its CI; (the row, ``log``
    with that run as its part ``olagpt_row``)."""
    olagpt = OlaGPTConfig(
        dataset="strategyqa",
        split=config.split,
        n_questions=config.n_questions,
        offset=config.offset,
        strategies=[ZERO_SHOT],
        seed=config.seed,
        data_dir=config.data_dir,
        **config.stats().as_dict(),
    )
    records, names, olagpt_log = get_records("live", olagpt)
    acc = method_accuracy(records, names, olagpt.analysis())
    row = acc[acc["method"] == REGEX_VOTE].assign(method=f"OlaGPT {REGEX_VOTE} ({len(names)} templates)")
    row = row.drop(columns="notes_strategy").assign(corpus=setting_label(parse_spec(config.corpus)[1]))
    return row, log.with_part("olagpt_row", olagpt_log)


def review_records(config: ReviewConfig) -> tuple[pd.DataFrame, RunLog]:
    """The review loop live on a dataset slice (olakit.review.run); roles take their endpoints from the environment.
    (records, run log with every role's endpoint and calls)."""
    res = run_review(config)
    return res.records, res.log


def open_judgement(n_questions: int, config: ReviewConfig):
    """Open questions (the shipped open_questions.jsonl, the first ``n_questions``): the loop's final answer against
    the direct answer, judged pairwise in both orders by the ``judge`` role. (records, summary of loop / tie /
    direct with CIs and the position bias, one row per question with its verdict, the run log of both: the loop's,
    with the judge's as its part ``judge``)."""
    cfg = config.replace(dataset="open", n_questions=n_questions, offset=0, split=None)
    res = run_review(cfg)
    recs = res.records
    final = recs[(recs["loop"] == f"review-{cfg.mode}") & (recs["iteration"] == cfg.max_iterations)]
    final = final.set_index("question_id")
    direct = recs[recs["loop"] == "direct"].set_index("question_id")
    ids = list(final.index)
    items = [
        (f"Question: {open_text}", final.loc[q, "raw_output"], direct.loc[q, "raw_output"])
        for q, open_text in zip(ids, [h.question for h in res.histories])
    ]
    with Run("open judge", cfg, roles=("judge",)) as job:
        verdicts = judge_pairs(job["judge"], items)
        judge_log = job.log()
    out = verdict_shares(verdicts, labels=("loop", "direct"), stats=cfg)
    per = pd.DataFrame(
        {
            "question_id": ids,
            "verdict": [v.verdict for v in verdicts],
            "loop_first": [v.first_order for v in verdicts],
            "direct_first": [v.second_order for v in verdicts],
        }
    )
    return res.records, out, per, res.log.with_part("judge", judge_log)


def add_llm_vote(
    records: pd.DataFrame, names: Sequence[str], log: RunLog, config: OlaGPTConfig, n_questions: int
) -> tuple[pd.DataFrame, RunLog]:
    """Recorded records plus an LLM vote by the configured model over the first ``n_questions`` questions'
    recorded answers, in place of the authors' recorded LLM vote on those questions; the vote's prompt, token
    limit, audit and seed are the config's. (the records, ``log`` with the vote's run as its part ``llm_vote``).
    ``n_questions = 0`` returns them as they are."""
    if not n_questions:
        return records, log
    cfg = config
    questions = {q.id: q for q in questions_of(cfg)}
    check_versions(records, questions)
    first = list(dict.fromkeys(records["question_id"]))[:n_questions]
    with Run("llm vote", cfg) as job:
        votes = llm_vote_records(
            job.answerer,
            records[records["question_id"].isin(first)],
            questions,
            names,
            audit=cfg.audit,
            seed=cfg.seed,
            max_tokens=cfg.vote_max_tokens,
            prompt=cfg.llm_vote_prompt,
        )
        vote_log = job.log(to_frame(votes))
    revoted = records["question_id"].isin(first) & records["template"].isin([LLM_VOTE, LLM_VOTE_SHUFFLED])
    return pd.concat([records[~revoted], to_frame(votes)], ignore_index=True), log.with_part("llm_vote", vote_log)
