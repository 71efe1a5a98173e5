"""``report(result)``: the one function that builds a result's tables, for every kind (olakit.result.KINDS), so that
the doors and the notebooks copy nothing:

- ``olagpt`` and ``recorded`` (OlaGPT records): the paper tables over the templates, every method with intervals,
  the LLM-vote audit, usage (analysis.runs.run_tables), the paired tests between every cell with their Holm matrix,
  the replicate's disagreement when the run had one, and its templates' tool use (analysis.tools) when they had
  tools or ran programs;
- ``reproduction``: the paper's tables from the recorded outputs, beside its printed numbers (analysis.reproduce),
  and the ledger of its claims (analysis.ledger);
- ``geek``: Table 2, the paired tests between rows, cost, actions, steps (analysis.traces), the judge's verdicts;
- ``review``: accuracy per iteration, the flips between iterations, each iteration's answer length and review
  score, the cost of each stage (analysis.iterations);
- ``import`` and ``compare``: the comparison's tables (analysis.compare), and an import's report; an effort grid's
  own tables (analysis.effort);
- ``notes``: the pool's answers.

With a registration (the result's own, or one given), its comparisons are confirmatory in ``paired_tests`` (Holm over
the family alone) and judged in ``registered``, at the family's level. The analysis settings are the result's own
(its log's) unless given.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from olakit.analysis.compare import comparison_of, comparison_tables
from olakit.analysis.effort import effort_tables
from olakit.analysis.inference import cell_outcomes, holm_matrix, paired_tests, tie_group
from olakit.analysis.iterations import answer_trend, flips, iteration_accuracy, stage_cost
from olakit.analysis.ledger import claims_ledger
from olakit.analysis.reproduce import reproduction_tables
from olakit.analysis.runs import answer_every_cell, label_note_counts, run_tables
from olakit.analysis.tables import method_accuracy
from olakit.analysis.tools import tool_use
from olakit.analysis.traces import geek_tables
from olakit.analysis.variance import clustered_table, grid_tables
from olakit.analysis.verdicts import mark_roles
from olakit.answering.score import with_verdict
from olakit.config import is_dataset_file
from olakit.data.loaders import questions_of_ref
from olakit.errors import DataError
from olakit.names import voting_templates
from olakit.registration import Registered
from olakit.result import Result
from olakit.settings import Analysis


def analysis_of(log) -> Analysis:
    """The analysis settings a log's tables were computed with (its ``analysis``); the default where it has none."""
    return Analysis(**{k: v for k, v in (log.analysis or {}).items() if k in Analysis.model_fields})


def settings_of(result: Result, analysis: Analysis | None = None, registration: Registered | None = None) -> Analysis:
    """The analysis settings a result's report is computed under: ``analysis`` (default: the result's own), at a
    registered family's level (``registration``, default the result's own)."""
    analysis = analysis if analysis is not None else analysis_of(result.log)
    registration = registration if registration is not None else result.registration
    return registration.analysis_for(analysis) if registration is not None else analysis


def report(
    result: Result, analysis: Analysis | None = None, registration: Registered | None = None
) -> dict[str, pd.DataFrame]:
    """Every table of ``result``'s kind (module docstring), under ``analysis`` (default: the result's own) and
    ``registration`` (default: the result's own)."""
    registration = registration if registration is not None else result.registration
    analysis = settings_of(result, analysis, registration)
    if analysis.verdict != "records":  # the verdict the tables count (olakit's reading, or the source's own)
        result = dataclasses.replace(result, records=with_verdict(result.records, analysis.verdict))
    records, kind = result.records, result.kind
    if kind in ("olagpt", "recorded"):
        have = set(records["template"])
        names = [t for t in analysis.order(result.templates or voting_templates(records["template"])) if t in have]
        config = result.log.config or {}
        chosen_only = bool(config.get("choose_k")) and not config.get("choice_comparison")  # the chosen vote is its
        voted = not chosen_only and answer_every_cell(records[records["sample"] == 0], names)
        tables = run_tables(records, names, analysis, vote=voted)
        outcomes = cell_outcomes(label_note_counts(records), names, analysis, voted)
        tests = paired_tests(outcomes, analysis=analysis)
        tables |= {"paired_tests": tests, "holm_matrix": holm_matrix(tests)}
        if getattr(result.extras, "replicate", None):
            tables["replicate"] = pd.DataFrame(result.extras.replicate["cells"])
        if kind == "olagpt" and "trace" in records and len(use := tool_use(records)):
            tables["tool_use"] = use  # templates with tools, or a program template
        tables |= grid_tables(records, analysis)
        tables |= _ties(tables, "methods", lambda r: f"{r['method']} | {r['notes_strategy']}", analysis)
        tables |= _clustered(result, lambda: outcomes)
    elif kind == "reproduction":
        tables = reproduction_tables(records, analysis) | grid_tables(records, analysis)
        tables["claims_ledger"] = claims_ledger(tables, (result.log.parameters or {}).get("data_dir"))
    elif kind == "geek":
        tables = geek_tables(records, analysis)
        tables |= grid_tables(records, analysis, ["row"]) | _ties(tables, "table2", lambda r: r["method"], analysis)
        tables |= _clustered(result, lambda: records.pivot_table(index="question_id", columns="row", values="correct",
                                                                 aggfunc="first", sort=False))  # fmt: skip
        if result.extras.judge:
            tables["judge"] = pd.DataFrame([result.extras.judge])
    elif kind == "review":
        tables = {"iteration_accuracy": iteration_accuracy(records, analysis), "flips": flips(records),
                  "answer_trend": answer_trend(records), "stage_cost": stage_cost(records)}  # fmt: skip
        if result.extras.scored_by:  # free-text answers: how they were scored, named in the table
            tables["iteration_accuracy"]["scored_by"] = result.extras.scored_by
        cells = records.assign(cell=records["loop"] + " " + records["iteration"].astype(str))  # "direct 0"
        outcomes = cells.pivot_table(index="question_id", columns="cell", values="correct", aggfunc="first",
                                     sort=False).astype(float)  # fmt: skip
        if outcomes.shape[1] > 1:  # every answer against every other: the tie group of the best
            tables["paired_tests"] = paired_tests(outcomes, analysis=analysis)
        tables |= grid_tables(cells, analysis, ["cell"])
        tables |= _ties(tables, "iteration_accuracy", lambda r: f"{r['method']} {r['iteration']}", analysis)
        tables |= _clustered(result, lambda: outcomes)
    elif kind in ("import", "compare"):
        vote_over = result.log.config.get("vote_over")
        comparison = comparison_of(result)
        tables = comparison_tables(comparison, vote_over, analysis)
        tables |= _ties(tables, "methods", lambda r: r["method"], analysis)
        if (result.log.parameters or {}).get("effort_grid"):  # one run per reasoning effort (door.effort_grid)
            efforts = (result.log.config or {}).get("reasoning_effort")
            tables |= effort_tables(tables, comparison.conditions, efforts, analysis=analysis)
        tables |= _clustered(result, lambda: comparison.shared()[0].pivot(index="question_id", columns="template",
                                                                          values="correct"))  # fmt: skip
        if kind == "import":
            tables |= import_tables(result.extras.report)
    elif kind == "notes":
        tables = {"pool_answers": method_accuracy(records, voting_templates(records["template"]), analysis)}
    else:
        raise DataError(f"a result of kind {kind!r}: no report for it")
    if registration is not None and "paired_tests" in tables and len(tables["paired_tests"]):
        tables |= mark_roles(tables["paired_tests"], registration, analysis)
    return tables


def clusters_of(result: Result) -> dict[str, str]:
    """Question id -> cluster: for a run on a dataset file whose mapping names a ``cluster`` field (the questions
    read back as the run read them), and for an import whose runs name one (its report's); {} for every other run."""
    imported = getattr(getattr(result.extras, "report", None), "clusters", None) or {}
    ref = result.log.dataset
    if ref is None or not is_dataset_file(ref.dataset):
        return dict(imported)
    return {q.id: q.meta["cluster"] for q in questions_of_ref(ref) if "cluster" in q.meta} | imported


def _clustered(result: Result, outcomes) -> dict:
    """The ``clustered`` table (olakit.analysis.variance.clustered_table: each cell's and each pair's independent
    and cluster-robust standard errors and the design effect) when the run's questions come in clusters;
    ``outcomes()``: questions x cells, made only then."""
    clusters = clusters_of(result)
    if not clusters:
        return {}
    return {"clustered": clustered_table(outcomes().astype(float), clusters)}


def _ties(tables: dict, name: str, cell, analysis: Analysis) -> dict:
    """``tables[name]`` (an accuracy table: one row a cell) with ``tied_with_best`` (olakit.analysis.inference
    .tie_group: not shown to differ from the best cell, Holm over the comparisons with it) and ``best``, and the
    ``tie_group`` table; ``cell(row)``: the row's cell as the paired tests name it. Rows outside the tests: empty."""
    table, tests = tables.get(name), tables.get("paired_tests")
    if table is None or tests is None or not len(table) or not len(tests):
        return {}
    in_tests = set(tests["a"]) | set(tests["b"])
    keys = [cell(r) for _, r in table.iterrows()]
    accuracy = {k: a for k, a in zip(keys, table["accuracy"]) if k in in_tests}
    group = tie_group(tests, accuracy, analysis)
    by = group.set_index("cell")
    marked = table.assign(
        tied_with_best=[by["tied_with_best"].get(k, pd.NA) for k in keys],
        best=[by["best"].get(k, pd.NA) for k in keys],
    )
    return {name: marked, "tie_group": group}


def import_tables(report) -> dict[str, pd.DataFrame]:
    """An import's own tables: ``import_report``, one row per run (rows, matched, skipped, unmatched, duplicates,
    missing, what scores the records and what the source's verdicts are, and the counts of gold conflicts and of the
    answers olakit's reading scores otherwise than the source); ``score_disagreements``, each such answer (run,
    question, repeat, the answer as given, olakit's reading and its rule, the gold, both verdicts); ``read_rules``,
    how many answers of each run each reading rule read (olakit.answering.read)."""
    runs = report.as_dict()["runs"]
    summary = pd.DataFrame(
        [{k: v for k, v in r.items() if not isinstance(v, list | dict)}
         | {"gold_conflicts": len(r["gold_conflicts"]), "score_disagreements": len(r["score_disagreements"])}
         for r in runs]
    )  # fmt: skip
    columns = ["run", "question_id", "sample", "answer", "read", "rule", "gold", "olakit", "source"]
    disagreements = pd.DataFrame(
        [{"run": r["run"], **d} for r in runs for d in r["score_disagreements"]], columns=columns
    )
    rules = pd.DataFrame(
        [{"run": r["run"], "rule": rule, "answers": n} for r in runs for rule, n in sorted(r["read_rules"].items())],
        columns=["run", "rule", "answers"],
    )
    return {"import_report": summary, "score_disagreements": disagreements, "read_rules": rules}
