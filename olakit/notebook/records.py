"""Records for the notebooks: the OlaGPT recorded outputs or a live OlaGPT run (``get_records``), GEEK's rows
(``geek_records``) and their OlaGPT cross-method row, the review loop (``review_records``, ``open_judgement``),
and an LLM vote over recorded answers (``add_llm_vote``). Each takes its method's config whole and returns the
records and an ``info`` dict (model, endpoint identity, calls, the config) for the manifest.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from olakit.analysis.tables import method_accuracy
from olakit.data.loaders import DEFAULT_SPLIT, load_questions
from olakit.data.recorded import RECORDED_TEMPLATES, import_olagpt
from olakit.data.records import to_frame
from olakit.errors import DataError
from olakit.geek.assessment import assess
from olakit.geek.config import GeekConfig
from olakit.geek.corpus import parse_spec, setting_label
from olakit.geek.run import run_geek
from olakit.llm import LLM, Endpoint
from olakit.llm.answerer import Counted
from olakit.llm.client import role_llm
from olakit.llm.judge import judge_pairs, summary
from olakit.names import LLM_VOTE, LLM_VOTE_SHUFFLED, REGEX_VOTE, ZERO_SHOT, voting_templates
from olakit.olagpt.config import OlaGPTConfig
from olakit.olagpt.llm_vote import llm_vote_records
from olakit.olagpt.run import run
from olakit.review.config import ReviewConfig
from olakit.review.run import run_review


def _live(llm, result, **more) -> dict:
    """The ``info`` of a live run: where it ran (model, endpoint identity; never a key), its calls and config."""
    info = {"source": "live", "model": llm.endpoint.model, "endpoint": llm.endpoint.identity}
    info["embedded"] = llm.endpoint.local  # the small model that ships with olakit: plumbing, not results
    return {**info, "calls": result.calls, "config": result.config, **more}


def get_records(source: str, config: OlaGPTConfig, *, concurrency: int | None = None):
    """(records, template names in vote order, info) from the OlaGPT recorded outputs or a live run of ``config``.

    ``source``: ``"recorded"`` (AQuA only: the authors' gpt-3.5 outputs, read with the config's reader; n_notes 3,
    and for ST also 1 and 5; with all five templates and an LLM vote asked for, the authors' recorded LLM vote) or
    ``"live"`` (the endpoint from the environment, or the embedded model). ``info["config"]`` holds the settings.
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
        info = {
            "source": "olagpt-recorded",
            "model": "gpt-3.5-turbo",
            "endpoint": "recorded (OlaGPT repository)",
            "n_notes": sorted(set(df["n_notes"])),
            "n_questions": len(keep),
            "config": cfg.as_dict(),
            "calls": {"requests": 0},
        }
        return df, cfg.order(names), info
    if source == "live":
        with LLM(concurrency=concurrency) as llm:
            res = run(cfg, llm=llm)
            info = _live(llm, res, n_questions=res.records["question_id"].nunique())
        return res.records, cfg.order(voting_templates(res.records["template"])), info
    raise DataError(f"source {source!r}: use 'recorded' or 'live'")


def geek_records(config: GeekConfig, *, judge_questions: int = 0, concurrency: int | None = None):
    """GEEK's rows live (olakit.geek.run): (records with traces, info with the model, endpoint, calls, recall@k,
    corpus label and, with ``judge_questions``, the pairwise judge's Table 3)."""
    cfg = config
    with LLM(concurrency=concurrency) as llm:
        res = run_geek(cfg, llm=llm)
        info = _live(llm, res, recall=res.recall, corpus=res.corpus)
        if judge_questions:
            questions = {q.id: q for q in load_questions("strategyqa", cfg.split, cfg.data_dir)}
            first = list(dict.fromkeys(res.records["question_id"]))[:judge_questions]
            row = "Full" if "Full" in cfg.rows else cfg.rows[-1]
            judge = role_llm("judge", llm)  # not the core model judging itself, where a judge endpoint is set
            judged = res.records[res.records["question_id"].isin(first)]
            info["judge"], _ = assess(Counted(judge), judged, questions, row)
            info["judge"]["model"] = judge.endpoint.model
            info["judge"]["judge_is_core_model"] = judge is llm
    return res.records, info


def olagpt_vote_row(config: GeekConfig, info: dict, *, n_boot: int = 2000) -> pd.DataFrame:
    """The cross-method row: OlaGPT's templates answer the same StrategyQA questions zero-shot, and their regex vote
    (the authors' vote rule) is one row of accuracy with its CI (``info["calls_olagpt_row"]`` holds its calls)."""
    olagpt = OlaGPTConfig(
        dataset="strategyqa",
        split=config.split,
        n_questions=config.n_questions,
        offset=config.offset,
        strategies=[ZERO_SHOT],
        seed=config.seed,
        data_dir=config.data_dir,
    )
    records, names, olagpt_info = get_records("live", olagpt)
    info["calls_olagpt_row"] = olagpt_info["calls"]
    acc = method_accuracy(records, names, rule=olagpt.rule(), seed=olagpt.seed, n_boot=n_boot)
    row = acc[acc["method"] == REGEX_VOTE].assign(method=f"OlaGPT {REGEX_VOTE} ({len(names)} templates)")
    return row.drop(columns="notes_strategy").assign(corpus=setting_label(parse_spec(config.corpus)[1]))


def review_records(config: ReviewConfig) -> tuple[pd.DataFrame, dict]:
    """The review loop live on a dataset slice (olakit.review.run); roles take their endpoints from the environment.
    (records, info with models, roles, calls)."""
    res = run_review(config)
    info = {
        "source": "live",
        "model": res.config["roles"]["answerer"],
        "endpoint": res.config["roles"],
        "calls": res.calls,
        "config": res.config,
    }
    return res.records, info


def open_judgement(n_questions: int, config: ReviewConfig, *, n_boot: int = 2000):
    """Open questions (the shipped open_questions.jsonl, the first ``n_questions``): the loop's final answer against
    the direct answer, judged pairwise in both orders by the ``judge`` role. (records, summary of loop / tie /
    direct with CIs and the position bias, one row per question with its verdict)."""
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
    with LLM(Endpoint.from_env("judge")) as judge:
        verdicts = judge_pairs(Counted(judge), items)
    out = summary(verdicts, labels=("loop", "direct"), n_boot=n_boot, seed=cfg.seed)
    per = pd.DataFrame(
        {
            "question_id": ids,
            "verdict": [v.verdict for v in verdicts],
            "loop_first": [v.first_order for v in verdicts],
            "direct_first": [v.second_order for v in verdicts],
        }
    )
    return res.records, out, per


def add_llm_vote(
    records: pd.DataFrame, names: Sequence[str], info: dict, config: OlaGPTConfig, n_questions: int
) -> pd.DataFrame:
    """Recorded records plus an LLM vote by the configured model over the first ``n_questions`` questions'
    recorded answers, in place of the authors' recorded LLM vote on those questions (``info`` gets the vote's model
    and endpoint); the vote's prompt, token limit, audit and seed are the config's. ``n_questions = 0`` returns the
    records."""
    if not n_questions:
        return records
    cfg = config
    questions = {q.id: q for q in load_questions(cfg.dataset, DEFAULT_SPLIT[cfg.dataset], cfg.data_dir)}
    first = list(dict.fromkeys(records["question_id"]))[:n_questions]
    with LLM() as llm:
        votes = llm_vote_records(
            llm,
            records[records["question_id"].isin(first)],
            questions,
            names,
            audit=cfg.audit,
            seed=cfg.seed,
            max_tokens=cfg.vote_max_tokens,
            prompt=cfg.llm_vote_prompt,
        )
        info["vote_model"], info["vote_endpoint"] = llm.endpoint.model, llm.endpoint.identity
    revoted = records["question_id"].isin(first) & records["template"].isin([LLM_VOTE, LLM_VOTE_SHUFFLED])
    return pd.concat([records[~revoted], to_frame(votes)], ignore_index=True)
