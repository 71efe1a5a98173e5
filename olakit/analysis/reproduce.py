"""Recompute the OlaGPT paper's AQuA results from the authors' recorded gpt-3.5 outputs.

``reproduce_olagpt(data_dir)`` -> a Result of kind ``reproduction``; ``report(result)`` its tables, ``draw_figures``
their figures, and ``result.write(out_dir, tables, figures)`` writes::

    out_dir/records.parquet            5 templates x 4 note strategies x 254 questions
    out_dir/tables/accuracy.csv        Table 3: one row per method (templates, regex_vote), one column per strategy
    out_dir/tables/accuracy_ci.csv     the same cells with n, correct and the 95% Wilson interval
    out_dir/tables/consistency.csv     Table 4
    out_dir/tables/precision.csv       Table 7 (range and mean of the template accuracies)
    out_dir/tables/bounds.csv          Table 8 (regex_upper, regex_lower, regex_vote) with CIs
    out_dir/tables/template_count.csv  Fig 6's template-count ablation
    out_dir/tables/extraction.csv      unparsed answers per template and strategy
    out_dir/tables/paper_comparison.csv  paper vs recomputed, cell by cell
    figures_dir/*.png                  Fig 6, Fig 7 and Fig 12 (figures_dir defaults to out_dir/figures)

Everything is computed before anything is written, and the folder appears whole or not at all
(olakit.result), so bad input leaves the output directory as it was.
"""

from __future__ import annotations

import json
import logging

import pandas as pd

from olakit.analysis import figures
from olakit.analysis.tables import (
    answer_counts,
    bound_hits,
    compare_with_paper,
    compute_tables,
    ordered_strategies,
    template_count_ablation,
)
from olakit.answering.vote import regex_vote
from olakit.data.files import RESOURCES
from olakit.data.loaders import reading
from olakit.data.recorded import RECORDED_MODEL, RECORDED_SOURCE, RECORDED_TEMPLATES, import_olagpt
from olakit.errors import DataError
from olakit.names import RECORDED_READER, REGEX_VOTE, voting_templates
from olakit.result import RecordedExtras, Result
from olakit.runlog import make_log
from olakit.settings import ANALYSIS, Analysis

log = logging.getLogger("olakit")
PAPER_TABLES = RESOURCES / "paper_tables.json"


def load_paper_tables(dataset: str = "aqua") -> dict:
    """The paper's printed Tables 3, 4, 7 and 8 for ``aqua`` or ``ekar_zh`` (data/paper_tables.json), and under
    ``text`` the numbers it prints elsewhere (olakit.analysis.ledger)."""
    with open(PAPER_TABLES, encoding="utf-8") as fh:
        doc = json.load(fh)
    if dataset not in doc:
        raise DataError(f"{PAPER_TABLES}: no tables for dataset {dataset!r}")
    return doc[dataset]


def paper_comparison(tables: dict[str, pd.DataFrame], dataset: str = "aqua") -> pd.DataFrame:
    """Tables 3, 4, 7 and 8 beside the paper's printed values."""
    consistency = tables["consistency"].copy()
    consistency.index = consistency.index.astype(str)
    bounds = tables["bounds"].pivot(index="method", columns="notes_strategy", values="accuracy")
    ours = {"table3": tables["accuracy"], "table4": consistency, "table7": tables["precision"], "table8": bounds}
    printed = load_paper_tables(dataset)
    return compare_with_paper(ours, {name: printed[name] for name in ours})  # the tables ("text": the ledger's)


def draw_figures(tables: dict[str, pd.DataFrame]) -> dict[str, object]:
    """Matplotlib figures for Fig 6, Fig 7 and Fig 12 (not saved)."""
    import matplotlib.pyplot as plt  # the user's backend, whatever it is: olakit never switches it

    out = {}
    with figures.paper_style():
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        figures.before_after_voting(tables["accuracy_ci"], ax=ax)
        out["fig7_before_after_voting"] = fig
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        figures.template_count(tables["template_count"], ax=ax)
        out["fig6_template_count"] = fig
        counts = tables["answer_counts"]
        strategies = ordered_strategies(counts["notes_strategy"])
        fig, axes = plt.subplots(1, len(strategies), figsize=(4.2 * len(strategies), 4.4), squeeze=False)
        for ax, strategy in zip(axes[0], strategies):
            figures.agreement_heatmap(counts, strategy=strategy, ax=ax, cbar=False)
        fig.suptitle("Accuracy vs incorrect consistency per question (Fig 12)")
        fig.tight_layout()
        out["fig12_agreement_heatmaps"] = fig
    return out


def settings_comparison(records: pd.DataFrame, analysis: Analysis = ANALYSIS, dataset: str = "aqua") -> pd.DataFrame:
    """The recorded-data numbers that the vote settings move, under the authors' settings (preset ``paper``) and
    olakit's (preset ``olakit``), beside the paper: Table 3's regex vote, Table 4, Table 8's bounds and Fig 6's
    mean vote accuracy per k, with the number of questions whose vote (or count) each setting changes; the tie rule
    and the statistics are ``analysis``'s."""
    paper = load_paper_tables(dataset)
    per_preset = {}
    for name in ("paper", "olakit"):
        st = Analysis(preset=name, tie=analysis.tie, **analysis.stats().as_dict())
        templates = voting_templates(records["template"])
        base = records[records["template"].isin(templates)]
        per_preset[name] = {
            "vote": regex_vote(base, templates, st),
            "counts": answer_counts(base, templates, st),
            "fig6": template_count_ablation(base, templates, st),
        }
    rows = []
    a, b = per_preset["paper"], per_preset["olakit"]
    for strategy in ordered_strategies(records["notes_strategy"]):
        va, vb = (x["vote"][x["vote"]["notes_strategy"] == strategy] for x in (a, b))
        changed = int((va["correct"].to_numpy() != vb["correct"].to_numpy()).sum())
        rows.append(
            (
                "table3",
                REGEX_VOTE,
                strategy,
                paper["table3"].get(REGEX_VOTE, {}).get(strategy),
                va["correct"].mean(),
                vb["correct"].mean(),
                changed,
            )
        )
        ca, cb = (x["counts"][x["counts"]["notes_strategy"] == strategy] for x in (a, b))
        moved = int((ca["n_plurality"].to_numpy() != cb["n_plurality"].to_numpy()).sum())
        for c in range(2, int(ca["n_templates"].max()) + 1):
            rows.append(
                (
                    "table4",
                    f"c = {c}",
                    strategy,
                    paper["table4"].get(str(c), {}).get(strategy),
                    int((ca["n_plurality"] == c).sum()),
                    int((cb["n_plurality"] == c).sum()),
                    moved,
                )
            )
        hits_a, hits_b = bound_hits(ca), bound_hits(cb)
        for bound in hits_a:
            ha, hb = hits_a[bound].to_numpy(), hits_b[bound].to_numpy()
            rows.append(
                (
                    "table8",
                    bound,
                    strategy,
                    paper["table8"].get(bound, {}).get(strategy),
                    ha.mean(),
                    hb.mean(),
                    int((ha != hb).sum()),
                )
            )
        fa, fb = (x["fig6"][x["fig6"]["notes_strategy"] == strategy].set_index("k") for x in (a, b))
        for k in fa.index:
            rows.append(
                ("fig6", f"mean over subsets, k = {k}", strategy, None, fa.loc[k, "mean"], fb.loc[k, "mean"], None)
            )
    return pd.DataFrame(
        rows,
        columns=["table", "row", "notes_strategy", "paper", "authors_settings", "olakit_settings", "questions_changed"],
    )


def reproduction_tables(records: pd.DataFrame, analysis: Analysis = ANALYSIS) -> dict[str, pd.DataFrame]:
    """The paper's tables from the recorded records, with the comparison against the paper's numbers and between
    the authors' and olakit's vote settings (no figures)."""
    tables = compute_tables(records, analysis.order(RECORDED_TEMPLATES), analysis)
    tables["paper_comparison"] = paper_comparison(tables)
    tables["settings_comparison"] = settings_comparison(records, analysis)
    return tables


def reproduce_olagpt(
    data_dir=None,
    extractor: str | None = None,
    analysis: Analysis = ANALYSIS,
    *,
    door: str = "reproduce-olagpt",
    parameters: dict | None = None,
) -> Result:
    """The OlaGPT recorded outputs (the 5 templates and the authors' LLM vote) imported as a Result of kind
    ``reproduction``, whose report is the paper's tables under ``analysis`` (olakit.settings.Analysis: default the
    authors' vote order, tie and unparsed rules, seed 0, 2000 resamples, 95%). ``extractor``: the answer reader
    (default: the authors' regex, how they read their own outputs). ``door`` and ``parameters`` say who ran it, for
    the run log (the notebook passes its own, so its reruns find their folder)."""
    extractor = extractor or RECORDED_READER
    with reading() as files:
        records = import_olagpt(data_dir, extractor=extractor, parts=("templates", "llm_vote"))
    log.info("imported %d OlaGPT records with extractor %r", len(records), extractor)
    params = parameters if parameters is not None else {"extractor": extractor, "data_dir": data_dir}
    run_log = make_log(door, analysis, kind="reproduction", parameters=params, files=list(files))
    extras = RecordedExtras(
        source=RECORDED_SOURCE,
        model=RECORDED_MODEL,
        templates=analysis.order(RECORDED_TEMPLATES),
        n_notes=sorted({int(n) for n in records["n_notes"]}),
    )
    return Result(records, run_log, extras)
