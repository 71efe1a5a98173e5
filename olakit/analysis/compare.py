"""Runs side by side: any set of runs, live or imported (run folders, records files, import specs, frames), becomes
one comparison whose conditions are each run's cells (an OlaGPT template under one note strategy and count, a GEEK
row, a review loop's iteration), named by what tells them apart (``PoT``, ``recorded/DT/retrieval``,
``qwen/ST``), with olakit's tables over them: accuracy with intervals per condition, the regex vote over any subset
of conditions and its bounds, the template-count ablation over conditions, exact McNemar with Holm over every pair,
Cohen's and Fleiss' kappa, the error overlap, and the Fig-12 grids (the heatmap explorer reads the same records).

``compare(["results/pot_aqua", "results/paper/aqua_live"])`` -> Comparison; ``comparison_tables(c)`` -> tables;
``compare_runs(CompareConfig(sources=[...]))`` -> a Result (``olakit compare``, the compare_runs notebook), whose
report is the tables and which ``result.write(out_dir, tables)`` writes. A regex vote across the conditions is a
condition of its own only when asked for (``vote_over``): a vote added by default would enter every Holm family.

A condition's first answers are compared (``sample`` 0; repeats are counted, not compared); a comparison is over one
dataset, and over the questions every condition answered (the others are listed, their records kept). Two sources
that answered two versions of a question (their question hashes differ) are refused, never mixed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from olakit.analysis.agreement import agreement
from olakit.analysis.config import CompareConfig
from olakit.analysis.inference import holm_matrix, paired_tests
from olakit.analysis.intervals import accuracy_row
from olakit.analysis.runs import run_tables
from olakit.analysis.tables import usage_table
from olakit.analysis.variance import grid_tables
from olakit.analysis.verdicts import mark_roles
from olakit.answering.vote import regex_vote
from olakit.data.files import find_file
from olakit.data.imported import import_runs, load_import_spec
from olakit.data.loaders import dataset_ref, reading
from olakit.data.records import COLUMNS, answers_differ, check_frame, condition_columns, kind_of, normalise
from olakit.errors import DataError
from olakit.names import COMPARED, NON_TEMPLATES, REGEX_VOTE, natural_order
from olakit.registration import Registered, read_registration
from olakit.result import ComparisonExtras, ImportExtras, Result, extras_of
from olakit.runlog import load_run, make_log
from olakit.settings import ANALYSIS, Analysis

DOOR = "compare"
ALL = "all"
"""``vote_over: all``: every condition that is not itself a vote or a baseline of another kind (voters())."""
SPEC_SUFFIXES = (".yaml", ".yml", ".json")
_SHORT = {"n_notes": "n={}", "k": "k={}", "iteration": "iteration {}"}


@dataclass
class Comparison:
    """Runs side by side: their records as one OlaGPT-shaped frame (``template`` = the condition's name), one row per
    condition in ``conditions`` (which source, run, model and cell it is, and what its source's log says)."""

    records: pd.DataFrame
    conditions: pd.DataFrame
    sources: list[dict] = field(default_factory=list)
    """Per source: label, path, kind (run folder, records file, import spec, frame), door, rows."""
    repeats: int = 0
    """Answers beyond a condition's first (samples, epochs): kept in the sources, not compared."""

    @property
    def names(self) -> list[str]:
        return list(self.conditions["condition"])

    def shared(self, names: Sequence[str] | None = None) -> tuple[pd.DataFrame, list[str]]:
        """(the records of ``names`` on the questions every one of them answered, the questions left out)."""
        names = list(names) if names is not None else self.names
        sub = self.records[self.records["template"].isin(names)]
        counts = sub.groupby("question_id")["template"].nunique()
        keep = set(counts[counts == len(names)].index)
        return sub[sub["question_id"].isin(keep)], natural_order(set(counts.index) - keep)


def _read(source, label: str | None) -> tuple[str, pd.DataFrame, dict]:
    """(label, records, info) of one source."""
    if isinstance(source, pd.DataFrame):
        return label or "frame", source, {"kind": "frame", "path": ""}
    path = Path(source).expanduser()
    if not path.exists():  # an import spec of olakit's by name (pot_aqua), or nothing: said below
        try:
            path = find_file(source, own="imports", suffix=".yaml")
        except DataError:
            pass
    if path.is_dir() or path.suffix == ".parquet":
        records_path = path / "records.parquet" if path.is_dir() else path
        if not records_path.is_file():
            raise DataError(f"{path}: no records.parquet (a run folder, a records file or an import spec)")
        df, log = load_run(records_path)
        info = {"kind": "run folder" if path.is_dir() else "records file", "path": str(records_path)}
        if log is not None:
            extras = extras_of(log, str(records_path.parent))
            left_out = extras.report.left_out if isinstance(extras, ImportExtras) and extras.report else []
            prints = {r: list(e.system_fingerprints) for r, e in log.roles.items()}
            info |= {"door": log.door, "dataset": log.dataset, "fingerprints": prints, "left_out": left_out}
        name = label or (path.name if path.is_dir() else path.parent.name or path.stem)
        return name, df, info
    if path.suffix in SPEC_SUFFIXES:
        spec = load_import_spec(path)
        df, report = import_runs(spec)
        ref = dataset_ref(spec.dataset, spec.split, spec.data_dir, spec.dataset_map)
        info = {"kind": "import spec", "path": str(path), "import": report.as_dict(), "dataset": ref}
        return label or path.stem, df, info
    kinds = f"a run folder, a records file (.parquet) or an import spec ({', '.join(SPEC_SUFFIXES)})"
    raise DataError(f"{path}: not {kinds}")


def _short(model: str) -> str:
    return str(model).rsplit("/", 1)[-1]


def _comparable(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """One source's first answers with the columns that name its conditions: source, run, model, cell."""
    kind = kind_of(df, source)
    cells = condition_columns(kind)
    first = df[df["sample"] == 0] if "sample" in df.columns else df
    out = first.assign(_source=source)
    if len(out):  # each row's cell as a tuple, built once per distinct cell
        codes = out.groupby(cells, sort=False, dropna=False).ngroup().to_numpy()
        distinct = list(out[cells].drop_duplicates().itertuples(index=False, name=None))
        out["_cell"] = pd.Series(distinct, dtype=object).to_numpy()[codes]
    else:
        out["_cell"] = []
    out["_cell_names"] = [tuple(cells)] * len(out)
    return out


def condition_names(keys: pd.DataFrame) -> list[str]:
    """Each condition's name: the fewest of its parts (source, run, cell, model by its last path part) that tell
    the conditions apart, joined by ``/``; the model and the source are left out first. A lone condition is named
    by its cell."""
    parts = []
    for _, k in keys.iterrows():
        cell = [_SHORT.get(n, "{}").format(v) for n, v in zip(k["_cell_names"], k["_cell"])]
        parts.append([k["_source"], k["run"], _short(k["model"]), *cell])
    width = max(map(len, parts))
    parts = [p + [""] * (width - len(p)) for p in parts]
    kept = [i for i in range(width) if len({p[i] for p in parts}) > 1]
    for i in [2, 0, 1, *range(3, width)]:  # model, source, then run and the cell's parts
        fewer = [j for j in kept if j != i]
        if i in kept and fewer and len({tuple(p[j] for j in fewer) for p in parts}) == len(parts):
            kept = fewer
    kept = kept or [3]  # a lone condition: its cell
    names = ["/".join(dict.fromkeys(p[i] for i in kept if p[i])) for p in parts]  # a run named as its template: once
    if len(set(names)) < len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise DataError(f"conditions {twice} cannot be told apart; give the sources distinct labels")
    return names


def compare(
    sources: Sequence[str | os.PathLike | pd.DataFrame] | str | os.PathLike,
    labels: Sequence[str] | None = None,
) -> Comparison:
    """The runs of ``sources`` (run folders, records files, import specs, record frames) as one comparison;
    ``labels`` name the sources (default: a folder's name, a spec's file name)."""
    if isinstance(sources, str | os.PathLike | pd.DataFrame):
        sources = [sources]
    sources = list(sources)
    if not sources:
        raise DataError("compare: no sources given (run folders, records files or import specs)")
    if labels is not None and len(labels) != len(sources):
        raise DataError(f"compare: {len(labels)} labels for {len(sources)} sources")
    frames, infos, seen = [], [], set()
    repeats = 0
    for i, source in enumerate(sources):
        label, df, info = _read(source, labels[i] if labels else None)
        if label in seen:
            raise DataError(f"compare: two sources are labelled {label!r}; give labels")
        seen.add(label)
        if info.get("left_out"):
            df = df[~df["question_id"].isin(info["left_out"])]
        repeats += int((df["sample"] > 0).sum()) if "sample" in df.columns else 0
        frames.append(_comparable(df, label))
        infos.append({"label": label, **info, "rows": len(df)})
    every = pd.concat(frames, ignore_index=True)
    datasets = sorted(set(every["dataset"]))
    if len(datasets) > 1:
        raise DataError(f"compare: the sources answer several datasets ({', '.join(datasets)}); compare one at a time")
    versions = every[every["question_hash"] != ""].groupby("question_id")["question_hash"].nunique()
    if (versions > 1).any():
        bad = natural_order(versions[versions > 1].index)
        raise DataError(f"compare: the sources answered other versions of questions {bad[:3]} (question hashes differ)")
    who = ["_source", "run", "model", "_cell"]
    keys = every.drop_duplicates(who)[[*who, "_cell_names"]]
    names = condition_names(keys)
    every["template"] = np.array(names, dtype=object)[every.groupby(who, sort=False, dropna=False).ngroup()]
    every["run"] = every["_source"]
    every["notes_strategy"], every["n_notes"], every["sample"] = COMPARED, 0, 0
    for col, empty in (("note_ids", ()), ("note_sims", ()), ("question_type", "")):
        if col not in every.columns:  # a kind without the column (GEEK's, the review loop's): empty
            every[col] = [empty] * len(every)
            continue
        missing = np.flatnonzero(every[col].isna().to_numpy())  # a source without it, among others that have it
        if len(missing):
            values = every[col].to_numpy(dtype=object).copy()
            values[missing] = [empty] * len(missing)
            every[col] = pd.Series(values, index=every.index, dtype=object)
    extra = [c for c in ("overridden", "extracted_auto") if c in every.columns]
    records = check_frame(normalise(every[[*COLUMNS, *extra]].copy()), "comparison")
    conditions = pd.DataFrame(
        {
            "condition": names,
            "source": list(keys["_source"]),
            "run": list(keys["run"]),
            "model": list(keys["model"]),
            "method": [c[0] for c in keys["_cell"]],
            "cell": [", ".join(f"{n}={v}" for n, v in zip(cn, c)) for cn, c in zip(keys["_cell_names"], keys["_cell"])],
        }
    )
    n = records.groupby("template").size()
    conditions["answers"] = [int(n.get(c, 0)) for c in names]
    prints = {i["label"]: (i.get("fingerprints") or {}).get("answerer") or [] for i in infos}
    conditions["fingerprints"] = [", ".join(prints.get(src, [])) for src in conditions["source"]]
    return Comparison(records=records, conditions=conditions, sources=infos, repeats=repeats)


def voters(comparison: Comparison) -> list[str]:
    """The conditions a regex vote combines by default: every one that is not itself a vote or a baseline of
    another kind (an LLM vote, SC, a vote recorded by its source), which are compared, never voted."""
    others = (*NON_TEMPLATES, REGEX_VOTE)
    return [c for c, m in zip(comparison.names, comparison.conditions["method"]) if m not in others]


def comparison_tables(
    comparison: Comparison,
    vote_over: Sequence[str] | None = None,
    analysis: Analysis = ANALYSIS,
    registration: Registered | None = None,
) -> dict[str, pd.DataFrame]:
    """olakit's tables over the conditions, on the questions every condition answered: ``methods`` (accuracy with
    intervals of each condition), ``paired_tests`` (exact McNemar, Holm over every pair, paired bootstrap),
    ``holm_matrix``, Cohen's and Fleiss' kappa, the error overlap, and ``conditions``; with ``vote_over`` (conditions,
    or ``["all"]``: voters()), the regex vote over them as a condition of its own, with its bounds, consistency and
    template-count ablation; with a ``registration``, the pairs' roles and the ``registered`` table
    (verdicts.mark_roles)."""
    names = comparison.names
    vote_over = list(vote_over or [])
    vote_over = voters(comparison) if vote_over == [ALL] else vote_over
    unknown = [v for v in vote_over if v not in names]
    if unknown:
        raise DataError(f"vote_over names no condition: {unknown}; conditions: {', '.join(names)}")
    shared, left_out = comparison.shared(names)
    tables = run_tables(shared, vote_over, analysis) if len(vote_over) > 1 else {}
    outcomes = shared.pivot(index="question_id", columns="template", values="correct")[names]
    one = pd.DataFrame([accuracy_row(n, COMPARED, outcomes[n].to_numpy(bool), analysis) for n in names])
    vote = tables.get("methods", one.iloc[:0])
    tables["methods"] = pd.concat([one, vote[vote["method"] == REGEX_VOTE]], ignore_index=True)
    if len(vote_over) > 1:  # the vote is a cell of the paired tests too ("vote against the best run")
        outcomes[REGEX_VOTE] = regex_vote(shared, vote_over, analysis).set_index("question_id")["correct"]
    tests = paired_tests(outcomes, analysis=analysis)
    cells = list(outcomes.columns)
    agree = agreement(shared, names)
    conditions = comparison.conditions.copy()
    acc = tables["methods"].set_index("method")
    for col in ("n", "correct", "accuracy", "ci_low", "ci_high"):
        conditions[col] = [acc[col].get(c) for c in names]
    prints = dict(zip(conditions["condition"], conditions["fingerprints"]))
    tests["fingerprint_change"] = [fingerprint_change(prints.get(a, ""), prints.get(b, "")) for a, b in
                                   zip(tests["a"], tests["b"])] if len(tests) else []  # fmt: skip
    tables |= {
        "conditions": conditions,
        "usage": condition_usage(shared[shared["template"].isin(names)], tables["methods"]),
        "replicates": replicates(shared, conditions),
        "paired_tests": tests.sort_values("p_mcnemar_holm", kind="stable").reset_index(drop=True),
        "holm_matrix": holm_matrix(tests).reindex(index=cells, columns=cells),
        "cohen_kappa": agree["cohen_kappa"],
        "fleiss_kappa": agree["fleiss_kappa"],
        "error_overlap": agree["error_overlap"],
        "left_out": pd.DataFrame({"question_id": left_out}),
    }
    tables |= grid_tables(shared[shared["template"].isin(names)], analysis, ["template"])  # the conditions, crossed
    if registration is not None:
        tables |= mark_roles(tables["paired_tests"], registration, analysis)
    return tables


def condition_usage(records: pd.DataFrame, methods: pd.DataFrame) -> pd.DataFrame:
    """Per condition, on the questions every condition answered: its accuracy with the interval (``methods``), what
    it paid (tables.usage_table: calls, tokens, reasoning tokens among the completion tokens, cost), the answer
    tokens (completion less reasoning; all of them for a model that showed no thinking; empty where a reply showed
    thinking and the endpoint did not count it, as vLLM's reasoning parser: how much of the completion was thinking
    is unknown), the cost per correct answer (empty with no correct answer) and the share of replies cut off while
    thinking (``unfinished_rate``)."""
    usage = usage_table(records)
    acc = methods.set_index("method")
    out = usage[["method"]].copy()
    for col in ("n", "correct", "accuracy", "ci_low", "ci_high"):
        out[col] = [acc[col].get(m) for m in usage["method"]]
    out = out.join(usage.drop(columns="method"))
    reasoning = out["reasoning_tokens"] if "reasoning_tokens" in out else pd.Series(pd.NA, index=out.index)
    out["answer_tokens"] = out["completion_tokens"] - reasoning.fillna(0).astype("Int64")
    if {"reasoning", "reasoning_tokens"} <= set(records.columns):
        uncounted = records["reasoning"].fillna("").astype(str).ne("") & records["reasoning_tokens"].isna()
        out["answer_tokens"] = out["answer_tokens"].mask(out["method"].isin(set(records.loc[uncounted, "template"])))
    correct = out["correct"].astype("Float64")
    out["cost_per_correct"] = (out["cost"].astype("Float64") / correct).where(correct > 0)
    if "unfinished" in out:
        out["unfinished_rate"] = out["unfinished"] / out["records"]
    return out


def fingerprint_change(a: str, b: str) -> str:
    """What a paired test between two conditions should know of their endpoints' ``system_fingerprint`` (as their
    run logs recorded them, comma-separated): "" when nothing changed or nothing is known; else the change."""
    first, second = ({f for f in x.split(", ") if f} for x in (a, b))
    if len(first) > 1 or len(second) > 1:
        return "the backend changed within a run: " + "; ".join(", ".join(sorted(x)) for x in (first, second) if x)
    if first and second and first != second:
        return f"{first.pop()} vs {second.pop()}"
    return ""


def replicates(records: pd.DataFrame, conditions: pd.DataFrame) -> pd.DataFrame:
    """The noise floor: conditions that are the same cell of the same model in different sources (a rerun, a
    replicate slice), and how often their extracted answers differ on the questions both answered."""
    rows = []
    answers = records.pivot(index="question_id", columns="template", values="extracted")
    for (model, cell), group in conditions.groupby(["model", "cell"], sort=False):
        for a, b in combinations(group["condition"], 2):
            n, differ = answers_differ(answers[[a, b]])
            rows.append({"a": a, "b": b, "model": model, "cell": cell, "n": n, "answers_differ": differ,
                         "share_differ": differ / n if n else 0.0})  # fmt: skip
    return pd.DataFrame(rows, columns=["a", "b", "model", "cell", "n", "answers_differ", "share_differ"])


def comparison_result(comparison: Comparison, log_of) -> Result:
    """A comparison as a Result (its records, the log ``log_of(dataset)`` makes, ComparisonExtras)."""
    refs = [i["dataset"] for i in comparison.sources if i.get("dataset") is not None]
    extras = ComparisonExtras(
        sources=[{k: v for k, v in s.items() if k not in ("dataset", "fingerprints")} for s in comparison.sources],
        conditions=comparison.conditions.to_dict("records"),
        left_out=list(comparison.shared()[1]),
        replicates=replicates(*comparison.shared()[:1], comparison.conditions).to_dict("records"),
        repeats_not_compared=comparison.repeats,
        templates=comparison.names,
    )
    return Result(comparison.records, log_of(refs[0] if refs else None), extras)


def comparison_of(result: Result) -> Comparison:
    """The comparison a result of kind ``compare`` or ``import`` holds (its records and conditions)."""
    if result.kind == "import":
        return compare([result.records], labels=[result.log.parameters.get("label", "import")])
    x = result.extras
    return Comparison(result.records, pd.DataFrame(x.conditions), x.sources, x.repeats_not_compared)


def compare_runs(config: CompareConfig, *, parameters: dict | None = None, where=Path) -> Result:
    """The comparison of ``config.sources`` as a Result: its records (what the explorers open), each source's path
    and what its own log says, the registration read before anything is computed; ``where``: how a relative path
    resolves (a notebook's: its working directory's). Its tables are ``report(result)``."""
    registered = read_registration(where(config.registration)) if config.registration else None
    with reading() as files:
        comparison = compare([where(s) for s in config.sources], config.labels)
    missing = [v for v in config.vote_over or [] if v != ALL and v not in comparison.names]
    if missing:
        raise DataError(f"vote_over names no condition: {missing}; conditions: {', '.join(comparison.names)}")
    if registered is not None:
        registered.check_cells(comparison.names)
    return comparison_result(
        comparison,
        lambda ref: make_log(
            DOOR, config, kind="compare", parameters=parameters, files=list(files), dataset=ref,
            registration=registered.entry() if registered is not None else None,
        ),
    )  # fmt: skip
