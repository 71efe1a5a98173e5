"""What the ablation notebooks share: get records (recorded or live), write figures and a run manifest.

Each notebook is parameters, a call to ``get_records``, one or two analysis calls and ``finish``:

    records, templates, info = get_records("recorded", "aqua", strategies=["zero-shot", "retrieval"])
    table = tables.template_count_ablation(records, templates)
    finish(out_dir, "template_count", parameters("template_count", globals()), records, info,
           tables={"template_count": table}, figures={...})

``finish`` writes tables/NAME.csv, figures/NAME.png and .pdf, and manifest.json (model, endpoint identity,
prompt hashes, seeds, package versions; never a key) into out_dir.
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
from olakit.data.files import REPO_ROOT, write_atomic, write_tables
from olakit.data.loaders import DEFAULT_SPLIT, load_questions
from olakit.data.recorded import RECORDED_TEMPLATES, import_olagpt
from olakit.data.records import save_records, to_frame
from olakit.errors import DataError
from olakit.geek.assessment import assess
from olakit.geek.run import GeekConfig, run_geek
from olakit.llm import LLM, Endpoint
from olakit.llm.judge import judge_pairs, summary
from olakit.llm.usage import CallCounter
from olakit.names import LLM_VOTE, LLM_VOTE_SHUFFLED, REGEX_VOTE, STRATEGIES, ZERO_SHOT, voting_templates
from olakit.olagpt.llm_vote import llm_vote_audit, llm_vote_records
from olakit.olagpt.notes import resolve_library
from olakit.olagpt.run import RunConfig, run
from olakit.olagpt.settings import resolve, vote_order
from olakit.olagpt.vote import regex_vote
from olakit.review.loop import LoopConfig
from olakit.review.run import ReviewConfig, run_review

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
NOTEBOOKS = REPO_ROOT / "notebooks"


def parameters(notebook: str, namespace: dict) -> dict:
    """The values of a notebook's parameters (the names papermill finds in its ``parameters`` cell) in
    ``namespace`` (the notebook's globals, after papermill's injected cell): what the manifest records.

    ``parameters("template_count", globals())`` -> ``{"source": "recorded", ...}``.
    """
    return {name: namespace[name] for name in parameter_names(NOTEBOOKS / f"{notebook}.ipynb")}


def parameter_names(path: str | os.PathLike) -> list[str]:
    """The names assigned at the top level of a notebook's cell tagged ``parameters``, in order (what
    papermill.inspect_notebook lists, read with ``ast``: importing papermill in a kernel costs a second or two)."""
    import ast

    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    source = next("".join(c["source"]) for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    names = []
    for node in ast.parse(source).body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        names += [t.id for t in targets if isinstance(t, ast.Name) and t.id not in names]
    return names


def get_records(
    source: str,
    dataset: str = "aqua",
    *,
    n_questions: int | None = None,
    offset: int = 0,
    templates: Sequence[str] | None = None,
    strategies: Sequence[str] = STRATEGIES,
    n_notes: Sequence[int] = (3,),
    library: str | None = "olagpt",
    baselines: Sequence[str] = (),
    votes: Sequence[str] = (REGEX_VOTE,),
    sc_k: int = 5,
    max_tokens: int = 256,
    vote_max_tokens: int = 192,
    seed: int = 0,
    extractor: str | None = None,
    data_dir=None,
    concurrency: int = 4,
    preset: str | None = None,
    settings: dict | None = None,
    answer_stages: int = 1,
) -> tuple[pd.DataFrame, list[str], dict]:
    """(records, template names in vote order, info) from the OlaGPT recorded outputs or a live run.

    ``source``: ``"recorded"`` (AQuA only: the authors' gpt-3.5 outputs; every question unless a slice is asked
    for; n_notes 3, and for ST also 1 and 5; with all five templates and an LLM vote asked for, the authors'
    recorded LLM vote) or ``"live"`` (the endpoint from the environment, or the embedded model). ``preset`` and
    ``settings`` name the settings (olakit.olagpt.settings; default the ``paper`` preset); ``info["settings"]``
    holds the ones used.
    """
    chosen = resolve(preset, **(settings or {}))
    if source == "recorded":
        if dataset != "aqua":
            raise DataError(f"recorded outputs exist for AQuA only, not {dataset!r}; use source='live'")
        names = list(templates) if templates else RECORDED_TEMPLATES
        unknown = sorted(set(names) - set(RECORDED_TEMPLATES))
        if unknown:
            raise DataError(f"templates {unknown} are not in the recorded outputs; recorded: {RECORDED_TEMPLATES}")
        parts = ["templates"]
        if LLM_VOTE in votes and set(names) == set(RECORDED_TEMPLATES):
            parts.append("llm_vote")
        if "ST" in names and {1, 5} & set(n_notes):
            parts.append("st_notes_count")
        df = import_olagpt(data_dir, extractor=extractor or "olagpt", parts=parts)
        keep_n = {0, *n_notes}
        df = df[df["template"].isin([*names, LLM_VOTE]) & df["notes_strategy"].isin(strategies)]
        df = df[df["n_notes"].isin(keep_n)]
        ids = list(dict.fromkeys(df["question_id"]))
        keep = ids[offset : None if n_questions is None else offset + n_questions]
        df = df[df["question_id"].isin(keep)].reset_index(drop=True)
        info = {
            "source": "olagpt-recorded",
            "model": "gpt-3.5-turbo",
            "endpoint": "recorded (OlaGPT repository)",
            "n_notes": sorted(set(df["n_notes"])),
            "n_questions": len(keep),
            "settings": chosen.as_dict(),
            "calls": {"requests": 0},
        }
        return df, vote_order(names, chosen.vote_order), info
    if source == "live":
        cfg = RunConfig(
            dataset=dataset,
            n_questions=n_questions,
            offset=offset,
            templates=templates,
            strategies=tuple(strategies),
            n_notes=tuple(n_notes),
            library=library,
            baselines=tuple(baselines),
            votes=tuple(votes),
            sc_k=sc_k,
            max_tokens=max_tokens,
            vote_max_tokens=vote_max_tokens,
            seed=seed,
            extractor=extractor or "strict",
            data_dir=data_dir,
            settings=chosen,
            answer_stages=answer_stages,
        )
        with LLM(concurrency=concurrency) as llm:
            res = run(cfg, llm=llm)
            info = {
                "source": "live",
                "model": llm.endpoint.model,
                "endpoint": llm.endpoint.identity,
                "calls": res.calls,
                "n_questions": res.records["question_id"].nunique(),
                "settings": chosen.as_dict(),
                "run_config": res.config,
            }
        names = voting_templates(res.records["template"])
        return res.records, vote_order(names, chosen.vote_order), info
    raise DataError(f"source {source!r}: use 'recorded' or 'live'")


def geek_records(*, judge_questions: int = 0, concurrency: int = 4, **config) -> tuple[pd.DataFrame, dict]:
    """GEEK's rows live (olakit.geek.run; ``config``: GeekConfig's fields): (records with traces, info with the
    model, endpoint, calls, recall@k, corpus label and, with ``judge_questions``, the pairwise judge's Table 3)."""
    cfg = GeekConfig(**config).check()
    with LLM(concurrency=concurrency) as llm:
        res = run_geek(cfg, llm=llm)
        info = {
            "source": "live",
            "model": llm.endpoint.model,
            "endpoint": llm.endpoint.identity,
            "calls": res.calls,
            "recall": res.recall,
            "corpus": res.corpus,
            "run_config": res.config,
        }
        if judge_questions:
            questions = {q.id: q for q in load_questions("strategyqa", cfg.split, cfg.data_dir)}
            first = list(dict.fromkeys(res.records["question_id"]))[:judge_questions]
            row = "Full" if "Full" in cfg.rows else cfg.rows[-1]
            info["judge"], _ = assess(
                CallCounter(llm), res.records[res.records["question_id"].isin(first)], questions, row
            )
    return res.records, info


def olagpt_vote_row(
    split: str, n_questions: int | None, offset: int, info: dict, *, seed: int = 0, n_boot: int = 2000, data_dir=None
) -> pd.DataFrame:
    """The cross-method row: OlaGPT's templates answer the same StrategyQA questions zero-shot, and their regex vote
    (under the default settings) is one row of accuracy with its CI (``info["calls"]`` grows by its calls)."""
    records, names, olagpt_info = get_records(
        "live",
        "strategyqa",
        n_questions=n_questions,
        offset=offset,
        strategies=[ZERO_SHOT],
        seed=seed,
        data_dir=data_dir,
        votes=(REGEX_VOTE,),
    )
    info["calls_olagpt_row"] = olagpt_info["calls"]
    acc = method_accuracy(records, names, seed=seed, n_boot=n_boot, unparsed=olagpt_info["settings"]["unparsed"])
    row = acc[acc["method"] == REGEX_VOTE].assign(method=f"OlaGPT {REGEX_VOTE} ({len(names)} templates)")
    return row.assign(notes_strategy=info.get("run_config", {}).get("corpus", "").rsplit(":", 1)[-1] or ZERO_SHOT)


def review_records(
    *,
    mode: str = "lite",
    behaviour: str = "intended",
    max_iterations: int = 3,
    threshold: int = 4,
    seed: int = 0,
    **config,
) -> tuple[pd.DataFrame, dict]:
    """The review loop live on a dataset slice (olakit.review.run; ``config``: ReviewConfig's other fields); roles
    take their endpoints from the environment. (records, info with models, roles, calls)."""
    loop = LoopConfig(mode=mode, behaviour=behaviour, max_iterations=max_iterations, threshold=threshold, seed=seed)
    res = run_review(ReviewConfig(loop=loop, **config))
    info = {
        "source": "live",
        "model": res.config["roles"]["answerer"],
        "endpoint": res.config["roles"],
        "calls": res.calls,
        "run_config": res.config,
    }
    return res.records, info


def open_judgement(
    n_questions: int,
    *,
    mode: str = "lite",
    behaviour: str = "intended",
    max_iterations: int = 3,
    seed: int = 0,
    n_boot: int = 2000,
) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    """Open questions (data/review/open_questions.jsonl, the first ``n_questions``): the loop's final answer against
    the direct answer, judged pairwise in both orders by the ``judge`` role. (records, summary of loop / tie /
    direct with CIs and the position bias, one row per question with its verdict)."""
    loop = LoopConfig(mode=mode, behaviour=behaviour, max_iterations=max_iterations, seed=seed)
    res = run_review(ReviewConfig(dataset="open", n_questions=n_questions, loop=loop))
    final = res.records[res.records["template"] == f"review-{mode}@{max_iterations}"].set_index("question_id")
    direct = res.records[res.records["template"] == "direct"].set_index("question_id")
    ids = list(final.index)
    items = [
        (f"Question: {open_text}", final.loc[q, "raw_output"], direct.loc[q, "raw_output"])
        for q, open_text in zip(ids, [h.question for h in res.histories])
    ]
    with LLM(Endpoint.from_env("judge")) as judge:
        verdicts = judge_pairs(CallCounter(judge), items)
    out = summary(verdicts, labels=("loop", "direct"), n_boot=n_boot, seed=seed)
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
    records: pd.DataFrame,
    names: Sequence[str],
    info: dict,
    *,
    dataset: str,
    n_questions: int,
    audit: bool = True,
    seed: int = 0,
    max_tokens: int = 192,
    data_dir=None,
    prompt: str = "paper",
) -> pd.DataFrame:
    """Recorded records plus an LLM vote by the configured model over the first ``n_questions`` questions'
    recorded answers, in place of the authors' recorded LLM vote on those questions (``info`` gets the vote's model
    and endpoint). ``n_questions = 0`` returns the records."""
    if not n_questions:
        return records
    questions = {q.id: q for q in load_questions(dataset, DEFAULT_SPLIT[dataset], data_dir)}
    first = list(dict.fromkeys(records["question_id"]))[:n_questions]
    with LLM() as llm:
        votes = llm_vote_records(
            llm,
            records[records["question_id"].isin(first)],
            questions,
            names,
            audit=audit,
            seed=seed,
            max_tokens=max_tokens,
            prompt=prompt,
        )
        info["vote_model"], info["vote_endpoint"] = llm.endpoint.model, llm.endpoint.identity
    revoted = records["question_id"].isin(first) & records["template"].isin([LLM_VOTE, LLM_VOTE_SHUFFLED])
    return pd.concat([records[~revoted], to_frame(votes)], ignore_index=True)


def vote_type_tables(
    records: pd.DataFrame,
    names: Sequence[str],
    *,
    tie: str = "first",
    seed: int = 0,
    n_boot: int = 2000,
    unparsed: str = "abstain",
) -> dict[str, pd.DataFrame]:
    """Figs 7-8 / Table 8: the regex bounds, the regex vote and any LLM vote, with CIs (``vote_type``); and the
    LLM-vote audit over the questions that have an LLM vote (``llm_vote_audit``) when there is one."""
    base = records[records["template"].isin(names)]
    counts = answer_counts(base, names, unparsed)
    vote = regex_vote(base, names, tie=tie, seed=seed, unparsed=unparsed)
    bounds = bounds_long(counts, vote, seed=seed, n_boot=n_boot)
    votes = method_accuracy(records, [], seed=seed, n_boot=n_boot)
    tables = {"vote_type": pd.concat([bounds, votes], ignore_index=True)}
    if {LLM_VOTE, LLM_VOTE_SHUFFLED} <= set(records["template"]):
        voted = set(records.loc[records["template"] == LLM_VOTE, "question_id"])
        tables["llm_vote_audit"] = llm_vote_audit(records[records["question_id"].isin(voted)], names, tie=tie)
    return tables


def similarity_table(
    records: pd.DataFrame,
    names: Sequence[str],
    *,
    source: str,
    dataset: str,
    library: str | None,
    edges: Sequence[float],
    seed: int = 0,
    n_boot: int = 2000,
    data_dir=None,
) -> pd.DataFrame:
    """Accuracy by retrieval-similarity band: live records carry the shown notes' similarities; recorded runs did
    not keep their notes, so each question's similarity to its nearest library note is used (one embedder load)."""
    templated = records[records["template"].isin(names)]
    if source != "recorded":
        return similarity_bands(templated, edges=edges, seed=seed, n_boot=n_boot)
    ids = set(records["question_id"])
    questions = [q for q in load_questions(dataset, DEFAULT_SPLIT[dataset], data_dir) if q.id in ids]
    sims = nearest_note_similarity(questions, resolve_library(library, data_dir))
    return similarity_bands(templated, sims, edges=edges, seed=seed, n_boot=n_boot)


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
                ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        return None


SECRET_NAME = re.compile(r"(^|_)(api_?key|key|secret|password|token|auth)$", re.IGNORECASE)


def manifest(notebook: str, parameters: dict, records: pd.DataFrame, info: dict) -> dict:
    """What a run used: parameters (anything named like a secret refused), model, endpoint identity, the named
    settings (olakit.olagpt.settings), questions, prompt hashes, seeds, package versions, python, git commit."""
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
        "settings": info.get("settings"),
        "run_config": info.get("run_config"),
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
