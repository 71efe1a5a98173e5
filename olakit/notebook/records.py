"""Results for the notebooks: the OlaGPT recorded outputs or a live OlaGPT run (``get_records``), GEEK's rows
(``geek_records``) and their OlaGPT cross-method row, the review loop (``review_records``, ``open_judgement``), an
LLM vote over recorded answers (``add_llm_vote``), a tools ablation's runs side by side (``tool_ablation``), and
notes libraries built in several ways, each run side by side with the authors' (``library_ablation``), and the
E-KAR half of the paper: notes built on train, every template and strategy on validation (``ekar_reproduction``).
Each takes its method's config whole and returns a Result (olakit.result); calls made for another part of the same
result (a judge, a vote, a second run) are its parts. Every call goes through a run (olakit.runner), so a failed
one is refused.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from olakit.analysis.compare import compare, comparison_result
from olakit.analysis.inference import holm
from olakit.analysis.intervals import verdict_shares
from olakit.analysis.reproduce import paper_comparison
from olakit.analysis.similarity import nearest_note_similarity, similarity_bands
from olakit.analysis.tables import compute_tables, method_accuracy
from olakit.analysis.tools import tool_changes, tool_effect, tool_use
from olakit.analysis.traces import judge_table
from olakit.data.datasets import check_versions
from olakit.data.loaders import questions_of, reading, ref_of
from olakit.data.recorded import RECORDED_MODEL, RECORDED_SOURCE, RECORDED_TEMPLATES, import_olagpt
from olakit.errors import DataError
from olakit.geek.assessment import assess
from olakit.geek.config import GeekConfig
from olakit.geek.run import run_geek
from olakit.llm.judge import judge_pairs
from olakit.methods import BUILTIN
from olakit.names import LLM_VOTE, LLM_VOTE_SHUFFLED, REGEX_VOTE, ZERO_SHOT, setting_label, voting_templates
from olakit.olagpt.active_learning import LIBRARY, build_notes
from olakit.olagpt.config import OWN_LIBRARY, NotesConfig, OlaGPTConfig
from olakit.olagpt.llm_vote import llm_vote_records
from olakit.olagpt.notes import NotesLibrary, error_reason, library_of, note_from_question, resolve_library
from olakit.olagpt.run import run
from olakit.registration import Registered
from olakit.result import GeekExtras, OlaGPTExtras, RecordedExtras, Result, ReviewExtras
from olakit.retrieval.knowledge import parse_spec
from olakit.runlog import make_log
from olakit.runner import Run
from olakit.types import GeekRecord, OlaGPTRecord, Question, ReviewRecord

REVIEW = BUILTIN["review"]
"""The review loop, as the table of methods has it (its config type and its run)."""
ReviewConfig = REVIEW.config


def get_records(
    source: str, config: OlaGPTConfig, *, concurrency: int | None = None, registration: Registered | None = None
) -> Result:
    """The OlaGPT recorded outputs or a live run of ``config`` as a Result (its ``templates`` in vote order);
    ``registration``: a pre-registered family, read before this call.

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
        with reading() as files:
            df = import_olagpt(cfg.data_dir, extractor=cfg.reader(recorded=True), parts=parts)
            ref = ref_of(cfg)
        df = df[df["template"].isin([*names, LLM_VOTE]) & df["notes_strategy"].isin(cfg.strategies)]
        df = df[df["n_notes"].isin({0, *cfg.n_notes})]
        keep = cfg.pick(list(dict.fromkeys(df["question_id"])))
        df = df[df["question_id"].isin(keep)].reset_index(drop=True)
        extras = RecordedExtras(source=RECORDED_SOURCE, model=RECORDED_MODEL, templates=cfg.order(names),
                                n_notes=sorted({int(n) for n in df["n_notes"]}))  # fmt: skip
        entry = registration.entry() if registration is not None else None
        log = make_log("recorded", cfg, kind="recorded", files=list(files), dataset=ref, registration=entry)
        return Result(df, log, extras)
    if source == "live":
        return run(cfg, concurrency=concurrency, registration=registration)
    raise DataError(f"source {source!r}: use 'recorded' or 'live'")


def geek_records(
    config: GeekConfig,
    *,
    judge_questions: int = 0,
    concurrency: int | None = None,
    registration: Registered | None = None,
) -> Result:
    """GEEK's rows live (olakit.geek.run) as a Result; with ``judge_questions``, the pairwise judge's Table 3 in its
    extras (``judge``) and its calls as the part ``judge``; ``registration``: a family of row comparisons, read
    before this call."""
    cfg = config
    res = run_geek(cfg, concurrency=concurrency, registration=registration)
    if not judge_questions:
        return res
    questions = {q.id: q for q in questions_of(cfg)}
    first = list(dict.fromkeys(res.records["question_id"]))[:judge_questions]
    row = "Full" if "Full" in cfg.rows else cfg.rows[-1]
    with Run("geek judge", cfg, kind="geek", roles=("judge",)) as job:  # the judge's endpoint, else the core model's
        judged = res.records[res.records["question_id"].isin(first)]
        verdicts = judge_table(assess(job["judge"], judged, questions, row, cfg.judge_tokens), row, cfg)
        judge = job.finish([], GeekRecord, GeekExtras(corpus=res.extras.corpus))
    verdicts["model"] = judge.log.roles["judge"].model
    verdicts["judge_is_core_model"] = judge.log.roles["judge"].identity == res.log.roles["answerer"].identity
    extras = dataclasses.replace(res.extras, judge=verdicts)
    return res.replace(extras=extras).with_part("judge", judge)


def olagpt_vote_row(config: GeekConfig, result: Result) -> tuple[pd.DataFrame, Result]:
    """The cross-method row: OlaGPT's templates answer the same StrategyQA questions zero-shot, and their regex vote
    (the authors' vote rule, the GEEK config's statistics) is one row of accuracy with its CI; (the row, ``result``
    with that run as its part ``olagpt_row``)."""
    olagpt = OlaGPTConfig(
        dataset="strategyqa",
        split=config.split,
        n_questions=config.n_questions,
        offset=config.offset,
        strategies=[ZERO_SHOT],
        data_dir=config.data_dir,
        **config.stats().as_dict(),
        **({"seed": config.seed} if config.seed is not None else {}),  # the run's seed where one is given
    )
    other = get_records("live", olagpt)
    acc = method_accuracy(other.records, other.templates, olagpt.analysis())
    row = acc[acc["method"] == REGEX_VOTE].assign(method=f"OlaGPT {REGEX_VOTE} ({len(other.templates)} templates)")
    row = row.drop(columns="notes_strategy").assign(corpus=setting_label(parse_spec(config.corpus)[1]))
    return row, result.with_part("olagpt_row", other)


def review_records(config: ReviewConfig) -> Result:
    """The review loop live on a dataset slice (olakit.review.run); roles take their endpoints from the
    environment."""
    return REVIEW.run(config)


def open_judgement(n_questions: int, config: ReviewConfig) -> tuple[Result, dict, pd.DataFrame]:
    """Open questions (the shipped open_questions.jsonl, the first ``n_questions``): the loop's final answer against
    the direct answer, judged pairwise in both orders by the ``judge`` role. (the loop's Result with the judge's as
    its part ``judge``, the summary of loop / tie / direct with CIs and the position bias, one row per question with
    its verdict)."""
    cfg = config.replace(dataset="open", n_questions=n_questions, offset=0, split=None)
    res = REVIEW.run(cfg)
    recs = res.records
    final = recs[(recs["loop"] == f"review-{cfg.mode}") & (recs["iteration"] == cfg.max_iterations)]
    final = final.set_index("question_id")
    direct = recs[recs["loop"] == "direct"].set_index("question_id")
    ids = list(final.index)
    items = [
        (f"Question: {open_text}", final.loc[q, "raw_output"], direct.loc[q, "raw_output"])
        for q, open_text in zip(ids, [h.question for h in res.extras.histories])
    ]
    with Run("open judge", cfg, kind="review", roles=("judge",)) as job:
        verdicts = judge_pairs(job["judge"], items, cfg.judge_tokens)
        judge = job.finish([], ReviewRecord, ReviewExtras())
    out = verdict_shares(verdicts, labels=("loop", "direct"), stats=cfg)
    per = pd.DataFrame(
        {
            "question_id": ids,
            "verdict": [v.verdict for v in verdicts],
            "loop_first": [v.first_order for v in verdicts],
            "direct_first": [v.second_order for v in verdicts],
        }
    )
    return res.with_part("judge", judge), out, per


def add_llm_vote(result: Result, config: OlaGPTConfig, n_questions: int) -> Result:
    """Recorded records plus an LLM vote by the configured model over the first ``n_questions`` questions'
    recorded answers, in place of the authors' recorded LLM vote on those questions; the vote's prompt, token
    limit, audit and seed are the config's (the vote's run is the result's part ``llm_vote``). ``n_questions = 0``
    returns it as it is."""
    if not n_questions:
        return result
    cfg, records = config, result.records
    with Run("llm vote", cfg, kind="olagpt") as job:
        questions = {q.id: q for q in questions_of(cfg)}
        check_versions(records, questions)
        first = list(dict.fromkeys(records["question_id"]))[:n_questions]
        votes = llm_vote_records(
            job.answerer,
            records[records["question_id"].isin(first)],
            questions,
            result.templates,
            audit=cfg.audit,
            seed=cfg.prompt_seed,
            generation=cfg.for_stage("llm_vote"),
            extractor=cfg.reader(),
            prompt=cfg.llm_vote_prompt,
        )
        vote = job.finish(votes, OlaGPTRecord, OlaGPTExtras(templates=result.templates))
    revoted = records["question_id"].isin(first) & records["template"].isin([LLM_VOTE, LLM_VOTE_SHUFFLED])
    both = pd.concat([records[~revoted], vote.records], ignore_index=True)
    return result.replace(records=both).with_part("llm_vote", vote)


TOOL_CONDITIONS = ("none", "calculator", "python", "facts+notes", "all")
"""tools_ablation.ipynb's conditions: no tools (the paper's runs), one tool, the retrieval tools, every tool."""


def tool_condition(config: OlaGPTConfig, condition: str) -> OlaGPTConfig:
    """The run of one condition of a tools ablation: ``none``, ``all``, ``retrieved`` (the tools index's top
    ``tools_k``), or tool names joined by ``+`` (``calculator+python``: those tools, all offered)."""
    if condition == "none":
        return config.replace(tools="none")
    if condition in ("all", "retrieved"):
        return config.replace(tools=condition)
    return config.replace(tools="all", tool_names=tuple(condition.split("+")))


def tool_ablation(config: OlaGPTConfig, conditions=TOOL_CONDITIONS) -> tuple[Result, dict[str, pd.DataFrame]]:
    """Each condition's live run of ``config`` (tool_condition), side by side as one comparison Result (every
    condition's calls counted in its log), and the tables only tools have: each condition's ``tool_use``, and
    against ``none`` (when it is one of them) ``tool_effect`` (McNemar, Holm over every row) and ``tool_changes``."""
    conditions = list(conditions)
    if len(set(conditions)) != len(conditions) or len(conditions) < 2:
        raise DataError(f"conditions {conditions}: give two or more, each once (none, all, retrieved or tool names)")
    runs = {c: run(tool_condition(config, c)) for c in conditions}
    comparison = compare([r.records for r in runs.values()], labels=conditions)
    first = next(iter(runs.values())).log
    calls = {}
    for r in runs.values():
        for role, c in r.log.calls.items():
            calls[role] = calls[role] + c if role in calls else c
    result = comparison_result(comparison, lambda ref: make_log(
        "notebook:tools_ablation", config, kind="compare", dataset=ref, files=sorted(
            {f for r in runs.values() for f in r.log.data}),
    ).replace(roles=first.roles, calls=calls))  # fmt: skip
    tables = {
        "tool_use": pd.concat([tool_use(r.records).assign(condition=c) for c, r in runs.items()], ignore_index=True)
    }
    if "none" in runs:
        without = runs["none"].records
        effect = [tool_effect(r.records, without).assign(condition=c) for c, r in runs.items() if c != "none"]
        changes = [tool_changes(r.records, without).assign(condition=c) for c, r in runs.items() if c != "none"]
        effect_table = pd.concat(effect, ignore_index=True)
        effect_table["p_mcnemar_holm"] = holm(effect_table["p_mcnemar"].tolist())  # over every condition's rows
        tables |= {"tool_effect": effect_table, "tool_changes": pd.concat(changes, ignore_index=True)}
    return result, tables


LIBRARY_WAYS = ("dataset", "llm", "self-correction", "refine")
"""active_learning.ipynb's ways of writing notes (NotesConfig.explainer); ``refine`` refines the ``dataset`` way's
notes (the dataset's rationales, written by people: the experts' drafts)."""
AUTHORS = "authors"
"""The condition of the authors' own library (the dataset's built-in one: AQuA's 81 notes, E-KAR's 2)."""


def library_ablation(
    config: OlaGPTConfig, ways=LIBRARY_WAYS, *, notes: NotesConfig, authors: bool = True
) -> tuple[Result, dict[str, pd.DataFrame]]:
    """Notes libraries built by active learning in each of ``ways`` (``notes``: the build's settings, its
    explainer set per way), then ``config``'s run with each library and, with ``authors``, with the dataset's
    built-in one, side by side as one comparison Result (every build's and run's calls in its log; the libraries
    among its files, ``library_<way>.jsonl``), and the table ``libraries``: per way the pool, the error book, the
    notes written, how many passed their check, and the calls the build and the run paid. A way that wrote no note
    has no run."""
    ways = list(ways)
    if not ways or len(set(ways)) != len(ways):
        raise DataError(f"ways {ways}: give one or more of {', '.join(LIBRARY_WAYS)}, each once")
    builds: dict[str, Result] = {}
    rows, runs, files = [], {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for way in ways:
            if way == "refine" and "dataset" not in builds:  # the drafts: the dataset's rationales as notes
                builds["dataset"] = build_notes(notes.replace(explainer="dataset", drafts=None))
            drafts = None
            if way == "refine":
                drafts = Path(tmp) / "drafts.jsonl"
                drafts.write_text(builds["dataset"].files[LIBRARY], encoding="utf-8")
            if way not in builds:
                builds[way] = build_notes(notes.replace(explainer=way, drafts=str(drafts) if drafts else None))
            text = builds[way].files[LIBRARY]
            path = Path(tmp) / f"{way}.jsonl"
            path.write_text(text, encoding="utf-8")
            files[f"library_{way}.jsonl"] = text
            x = builds[way].extras
            rows.append({"library": way, "pool": x.pool, "error_book": x.error_book, "notes": x.notes,
                         "checked": x.checked, "passed_check": x.passed,
                         "build_calls": builds[way].calls["total"]["paid"]})  # fmt: skip
            if x.notes:
                runs[way] = run(config.replace(library=str(path)))
        if authors and OWN_LIBRARY.get(config.dataset):
            runs[AUTHORS] = run(config.replace(library=OWN_LIBRARY[config.dataset]))
            rows.append({"library": AUTHORS, "pool": None, "error_book": None,
                         "notes": len(resolve_library(OWN_LIBRARY[config.dataset], config.data_dir)), "checked": 0,
                         "passed_check": 0, "build_calls": 0})  # fmt: skip
    if len(runs) < 2:
        raise DataError(f"libraries compared: {list(runs)}; fewer than two libraries had notes to run with")
    for row in rows:
        row["run_calls"] = runs[row["library"]].calls["total"]["paid"] if row["library"] in runs else 0
    comparison = compare([r.records for r in runs.values()], labels=list(runs))
    calls = {}
    for r in [*builds.values(), *runs.values()]:
        for role, c in r.log.calls.items():
            calls[role] = calls[role] + c if role in calls else c
    first = next(iter(runs.values())).log
    result = comparison_result(comparison, lambda ref: make_log(
        "notebook:active_learning", config, kind="compare", dataset=ref, files=sorted(
            {f for r in [*builds.values(), *runs.values()] for f in r.log.data}),
    ).replace(roles=first.roles, calls=calls))  # fmt: skip
    return result.replace(files={**result.files, **files}), {"libraries": pd.DataFrame(rows)}


EKAR_TEST = 335
"""The questions of E-KAR's (Chinese) test split, the paper's: blind here (no labels), so validation stands in."""


def stand_in(n: int) -> str:
    """The label of every E-KAR table and figure: what was evaluated against what the paper evaluated."""
    return f"validation ({n}) vs the paper's test ({EKAR_TEST})"


def ekar_reproduction(config: OlaGPTConfig, notes: NotesConfig) -> tuple[Result, dict[str, pd.DataFrame], str]:
    """The E-KAR half of Tables 3, 4, 7 and 8 and Fig 12: a notes library built by active learning on E-KAR's
    train split (``notes``), then ``config``'s run on validation with it (every template suited to E-KAR, AT
    included, and every note strategy unless narrowed), and the paper's tables from its records beside the
    paper's E-KAR numbers (``paper_comparison``). Every table carries ``compared_on``, the stand-in label
    (validation, n questions, against the paper's test of 335). (the run's Result with the build as its part
    ``notes_build`` and the library among its files, the tables, the label)."""
    if config.dataset != "ekar_zh" or notes.dataset != "ekar_zh":
        raise DataError(f"the E-KAR half runs on ekar_zh; got a run on {config.dataset}, notes of {notes.dataset}")
    build = build_notes(notes)
    if not build.extras.notes:
        raise DataError(f"the notes build on E-KAR {notes.split} wrote no note (no pool question was wrong in all "
                        f"{notes.r} answers): give a larger pool")  # fmt: skip
    text = build.files[LIBRARY]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / LIBRARY
        path.write_text(text, encoding="utf-8")
        result = run(config.replace(library=str(path)))
    result = result.with_part("notes_build", build).replace(files={**result.files, "notes.jsonl": text})
    label = stand_in(int(result.records["question_id"].nunique()))
    templates = config.order(result.templates or voting_templates(result.records["template"]))
    tables = compute_tables(result.records, templates, config)
    tables["paper_comparison"] = paper_comparison(tables, "ekar_zh")
    return result, {name: t.assign(compared_on=label) for name, t in tables.items()}, label


def similarity_table(
    records: pd.DataFrame,
    names: Sequence[str],
    config: OlaGPTConfig,
    *,
    source: str,
    edges: Sequence[float],
) -> pd.DataFrame:
    """Accuracy by retrieval-similarity band: live records carry the shown notes' similarities; recorded runs did
    not keep their notes, so each question's similarity to its nearest library note is used (one embedder load).
    The intervals follow the config's analysis settings."""
    cfg = config
    templated = records[records["template"].isin(names)]
    if source != "recorded":
        return similarity_bands(templated, edges=edges, analysis=cfg)
    ids = set(records["question_id"])
    questions = [q for q in questions_of(cfg) if q.id in ids]
    sims = nearest_note_similarity(questions, library_of(cfg, questions[0].dataset if questions else cfg.dataset))
    return similarity_bands(templated, sims, edges=edges, analysis=cfg)


def save_draft_note(path: Path, question: Question, wrong: list[str | None], question_type: str = ""):
    """``question``, which the templates answered ``wrong`` (unparsed: None), as a draft note (its explanation the
    dataset's rationale, to be edited) in the notes library file ``path`` (made when missing; a draft of the same
    question replaced); the note."""
    reason = error_reason(wrong, question.gold)
    note = note_from_question(question, explanation=question.rationale, error_reason=reason,
                              model_expert="draft (edit me)", llm_task_type=question_type,
                              source="curated")  # fmt: skip
    lib = NotesLibrary.load(path) if path.is_file() else NotesLibrary([])
    kept = [n for n in lib.notes if n.id != note.id]
    NotesLibrary([*kept, note], name=lib.name).save(path)
    return note
