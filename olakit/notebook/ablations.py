"""What the ablation notebooks share: their config and parameters, records (recorded or live), figures and a run
manifest.

Each notebook is a parameters cell, a call to ``configure``, ``get_records``, one or two analysis calls and
``finish``:

    cfg, params = configure("template_count", globals())   # the notebook's OlaGPTConfig and its parameters
    records, templates, info = get_records(source, cfg)
    table = tables.template_count_ablation(records, templates, rule=cfg.rule())
    finish(out_dir, "template_count", params, records, info, tables={"template_count": table}, figures={...})

A notebook's metadata names its config type (``"olakit": {"config": "olagpt"}``); any setting of that type can be
given as a papermill parameter or set in the parameters cell by its field name, and a name that is neither a setting
nor one of the notebook's own parameters is refused. ``finish`` writes tables/NAME.csv, figures/NAME.png and .pdf,
and manifest.json (model, endpoint identity, the config, prompt hashes, package versions; never a key) into
out_dir.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import re
import subprocess
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import pandas as pd

from olakit.analysis import figures
from olakit.analysis.inference import holm_matrix
from olakit.analysis.similarity import nearest_note_similarity, similarity_bands
from olakit.analysis.tables import answer_counts, bounds_long, method_accuracy
from olakit.data.files import WORKDIR, write_atomic, write_tables
from olakit.data.loaders import DEFAULT_SPLIT, load_questions
from olakit.data.recorded import RECORDED_TEMPLATES, import_olagpt
from olakit.data.records import save_records, to_frame
from olakit.errors import DataError
from olakit.geek.assessment import assess
from olakit.geek.config import GeekConfig
from olakit.geek.run import run_geek
from olakit.llm import LLM, Endpoint
from olakit.llm.answerer import Counted
from olakit.llm.judge import judge_pairs, summary
from olakit.names import LLM_VOTE, LLM_VOTE_SHUFFLED, REGEX_VOTE, ZERO_SHOT, voting_templates
from olakit.olagpt.config import PAPER, OlaGPTConfig, VoteRule
from olakit.olagpt.llm_vote import llm_vote_audit, llm_vote_records
from olakit.olagpt.notes import resolve_library
from olakit.olagpt.run import run
from olakit.olagpt.vote import regex_vote
from olakit.review.config import ReviewConfig
from olakit.review.run import run_review

PACKAGES = (
    "olakit",
    "openai",
    "numpy",
    "pandas",
    "scipy",
    "statsmodels",
    "scikit-learn",
    "faiss-cpu",
    "sentence-transformers",
    "torch",
    "xllamacpp",
    "papermill",
    "seaborn",
    "matplotlib",
)


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
            info = {
                "source": "live",
                "model": llm.endpoint.model,
                "endpoint": llm.endpoint.identity,
                "calls": res.calls,
                "n_questions": res.records["question_id"].nunique(),
                "config": res.config,
            }
        return res.records, cfg.order(voting_templates(res.records["template"])), info
    raise DataError(f"source {source!r}: use 'recorded' or 'live'")


def geek_records(config: GeekConfig, *, judge_questions: int = 0, concurrency: int | None = None):
    """GEEK's rows live (olakit.geek.run): (records with traces, info with the model, endpoint, calls, recall@k,
    corpus label and, with ``judge_questions``, the pairwise judge's Table 3)."""
    cfg = config
    with LLM(concurrency=concurrency) as llm:
        res = run_geek(cfg, llm=llm)
        info = {
            "source": "live",
            "model": llm.endpoint.model,
            "endpoint": llm.endpoint.identity,
            "calls": res.calls,
            "recall": res.recall,
            "corpus": res.corpus,
            "config": res.config,
        }
        if judge_questions:
            questions = {q.id: q for q in load_questions("strategyqa", cfg.split, cfg.data_dir)}
            first = list(dict.fromkeys(res.records["question_id"]))[:judge_questions]
            row = "Full" if "Full" in cfg.rows else cfg.rows[-1]
            info["judge"], _ = assess(Counted(llm), res.records[res.records["question_id"].isin(first)], questions, row)
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
    return row.drop(columns="notes_strategy").assign(corpus=config.corpus.rsplit(":", 1)[-1] or ZERO_SHOT)


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


def vote_type_tables(
    records: pd.DataFrame, names: Sequence[str], *, rule: VoteRule = PAPER, seed: int = 0, n_boot: int = 2000
) -> dict[str, pd.DataFrame]:
    """Figs 7-8 / Table 8: the regex bounds, the regex vote and any LLM vote, with CIs (``vote_type``); and the
    LLM-vote audit over the questions that have an LLM vote (``llm_vote_audit``) when there is one."""
    base = records[records["template"].isin(names)]
    counts = answer_counts(base, names, rule)
    vote = regex_vote(base, names, rule=rule, seed=seed)
    bounds = bounds_long(counts, vote, seed=seed, n_boot=n_boot)
    votes = method_accuracy(records, [], seed=seed, n_boot=n_boot)
    tables = {"vote_type": pd.concat([bounds, votes], ignore_index=True)}
    if {LLM_VOTE, LLM_VOTE_SHUFFLED} <= set(records["template"]):
        voted = set(records.loc[records["template"] == LLM_VOTE, "question_id"])
        tables["llm_vote_audit"] = llm_vote_audit(records[records["question_id"].isin(voted)], names, rule=rule)
    return tables


def similarity_table(
    records: pd.DataFrame,
    names: Sequence[str],
    config: OlaGPTConfig,
    *,
    source: str,
    edges: Sequence[float],
    n_boot: int = 2000,
) -> pd.DataFrame:
    """Accuracy by retrieval-similarity band: live records carry the shown notes' similarities; recorded runs did
    not keep their notes, so each question's similarity to its nearest library note is used (one embedder load)."""
    cfg = config
    templated = records[records["template"].isin(names)]
    if source != "recorded":
        return similarity_bands(templated, edges=edges, seed=cfg.seed, n_boot=n_boot)
    ids = set(records["question_id"])
    questions = [q for q in load_questions(cfg.dataset, DEFAULT_SPLIT[cfg.dataset], cfg.data_dir) if q.id in ids]
    sims = nearest_note_similarity(questions, resolve_library(cfg.library, cfg.data_dir))
    return similarity_bands(templated, sims, edges=edges, seed=cfg.seed, n_boot=n_boot)


def note_strategy_figures(tests: pd.DataFrame, kappas: pd.DataFrame, cost: pd.DataFrame) -> dict:
    """The note-strategy figures: Holm matrix of the paired tests, Pareto plot, Cohen's kappa per strategy."""
    import matplotlib.pyplot as plt

    with figures.paper_style():
        fig_p, ax = plt.subplots(figsize=(7, 4.5))
        figures.pareto(cost, ax=ax)
        fig_m, ax = plt.subplots(figsize=(11, 9))
        figures.matrix(holm_matrix(tests), ax=ax, title="Holm-adjusted exact McNemar p between cells")
        n = max(1, kappas["notes_strategy"].nunique())
        fig_k, axes = plt.subplots(1, n, figsize=(4 * n, 3.8), squeeze=False)
        for ax, (strategy, g) in zip(axes[0], kappas.groupby("notes_strategy", sort=False)):
            m = holm_matrix(g.rename(columns={"cohen_kappa": "v"}), value="v")
            figures.matrix(m, ax=ax, title=f"Cohen's kappa, {strategy}", cmap="mako", vmin=-0.2, vmax=1)
        fig_k.tight_layout()
    return {"table3_holm_matrix": fig_m, "pareto_cost_accuracy": fig_p, "template_kappa": fig_k}


def save_figure(fig, out_dir: str | os.PathLike, name: str) -> list[Path]:
    """figures/NAME.png and figures/NAME.pdf under out_dir (each written atomically)."""
    folder = Path(out_dir) / "figures"
    return [
        write_atomic(folder / f"{name}.{ext}", lambda p, e=ext: fig.savefig(p, format=e, dpi=150, bbox_inches="tight"))
        for ext in ("png", "pdf")
    ]


def package_versions(names: Sequence[str] = PACKAGES) -> dict[str, str | None]:
    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = None
    return out


def _commit() -> str | None:
    try:
        return (
            subprocess.run(
                ["git", "-C", str(WORKDIR), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        return None


SECRET_NAME = re.compile(r"(^|_)(api_?key|key|secret|password|token|auth)$", re.IGNORECASE)


def manifest(notebook: str, parameters: dict, records: pd.DataFrame, info: dict) -> dict:
    """What a run used: parameters (anything named like a secret refused), model, endpoint identity, the config
    (every setting), questions, prompt hashes, seeds, package versions, python, git commit."""
    bad = [k for k, v in parameters.items() if SECRET_NAME.search(k) or (isinstance(v, str) and v.startswith("sk-"))]
    if bad:
        raise DataError(f"parameters {bad} look like secrets; keys come from the environment only")
    hashes = sorted(set(records["prompt_hash"]))
    return {
        "notebook": notebook,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "parameters": parameters,
        "source": info.get("source"),
        "model": sorted(set(records["model"])) or [info.get("model")],
        "endpoint": info.get("endpoint"),
        "calls": info.get("calls", {}),
        "config": info.get("config"),
        "n_questions": int(records["question_id"].nunique()),
        "records": len(records),
        "prompt_hashes": hashes,
        "prompts_digest": hashlib.sha256("".join(hashes).encode()).hexdigest(),
        "seeds": {k: v for k, v in parameters.items() if "seed" in k},
        "packages": package_versions(),
        "python": platform.python_version(),
        "olakit_commit": _commit(),
    }


def finish(
    out_dir: str | os.PathLike,
    notebook: str,
    parameters: dict,
    records: pd.DataFrame,
    info: dict,
    *,
    tables: dict[str, pd.DataFrame],
    figures: dict,
) -> dict:
    """Write the records (records.parquet: what the explorers open), tables (CSV), figures (PNG and PDF) and
    manifest.json into out_dir; close the figures."""
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    save_records(records, out / "records.parquet")
    write_tables(tables, out)
    written = {name: [str(p) for p in save_figure(fig, out, name)] for name, fig in figures.items()}
    for fig in figures.values():
        plt.close(fig)
    man = manifest(notebook, parameters, records, info)
    man["tables"] = sorted(tables)
    man["figures"] = written
    write_atomic(out / "manifest.json", lambda p: p.write_text(json.dumps(man, indent=1, default=str)))
    return man
