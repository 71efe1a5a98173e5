"""Recompute the OlaGPT paper's AQuA results from the authors' recorded gpt-3.5 outputs.

``reproduce_olagpt(data_dir, out_dir)`` writes::

    out_dir/records.parquet            5 templates x 4 note strategies x 254 questions
    out_dir/tables/accuracy.csv        Table 3: one row per method (templates, regex_vote), one column per strategy
    out_dir/tables/accuracy_ci.csv     the same cells with n, correct and the 95% bootstrap CI
    out_dir/tables/consistency.csv     Table 4
    out_dir/tables/precision.csv       Table 7 (range and mean of the template accuracies)
    out_dir/tables/bounds.csv          Table 8 (regex_upper, regex_lower, regex_vote) with CIs
    out_dir/tables/template_count.csv  Fig 6's template-count ablation
    out_dir/tables/extraction.csv      unparsed answers per template and strategy
    out_dir/tables/paper_comparison.csv  paper vs recomputed, cell by cell
    figures_dir/*.png                  Fig 6, Fig 7 and Fig 12 (figures_dir defaults to out_dir/figures)

Everything is computed before anything is written, and each file is written atomically, so bad input
leaves the output directory as it was.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from olakit.analysis import figures
from olakit.analysis.tables import compare_with_paper, compute_tables, ordered_strategies
from olakit.data.files import REPO_ROOT, write_atomic, write_tables
from olakit.data.recorded import import_olagpt
from olakit.data.records import save_records
from olakit.errors import DataError
from olakit.olagpt.vote import check_tie_rule

log = logging.getLogger("olakit")
PAPER_TABLES = REPO_ROOT / "data" / "paper_tables.json"


def load_paper_tables(dataset: str = "aqua") -> dict:
    """The paper's printed Tables 3, 4, 7 and 8 for ``aqua`` or ``ekar_zh`` (data/paper_tables.json)."""
    with open(PAPER_TABLES, encoding="utf-8") as fh:
        doc = json.load(fh)
    if dataset not in doc:
        raise DataError(f"{PAPER_TABLES}: no tables for dataset {dataset!r}")
    return doc[dataset]


@dataclass
class Reproduction:
    """Everything reproduce_olagpt computed: the records, the tables and where they were written."""

    records: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    figures: dict[str, Path] = field(default_factory=dict)
    out_dir: Path | None = None


def paper_comparison(tables: dict[str, pd.DataFrame], dataset: str = "aqua") -> pd.DataFrame:
    """Tables 3, 4, 7 and 8 beside the paper's printed values."""
    consistency = tables["consistency"].copy()
    consistency.index = consistency.index.astype(str)
    bounds = tables["bounds"].pivot(index="method", columns="notes_strategy", values="accuracy")
    ours = {"table3": tables["accuracy"], "table4": consistency, "table7": tables["precision"], "table8": bounds}
    return compare_with_paper(ours, load_paper_tables(dataset))


def draw_figures(tables: dict[str, pd.DataFrame]) -> dict[str, object]:
    """Matplotlib figures for Fig 6, Fig 7 and Fig 12 (not saved)."""
    import matplotlib

    if not os.environ.get("MPLBACKEND") and "inline" not in matplotlib.get_backend():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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


def write_outputs(rep: Reproduction, out_dir: Path, figures_dir: Path, figs: dict) -> None:
    """Write records, tables (CSV) and figures (PNG)."""
    import matplotlib.pyplot as plt

    save_records(rep.records, out_dir / "records.parquet")
    write_tables(rep.tables, out_dir)
    for name, fig in figs.items():
        path = figures_dir / f"{name}.png"
        write_atomic(path, lambda p, f=fig: f.savefig(p, dpi=150, bbox_inches="tight", format="png"))
        rep.figures[name] = path
        plt.close(fig)
    rep.out_dir = out_dir


def reproduce_olagpt(
    data_dir=None,
    out_dir="results/reproduce_olagpt",
    figures_dir=None,
    extractor: str = "olagpt",
    tie: str = "first",
    seed: int = 0,
    n_boot: int = 2000,
) -> Reproduction:
    """Import the OlaGPT recorded outputs, compute the paper's tables and figures, write them to out_dir."""
    check_tie_rule(tie)
    records = import_olagpt(data_dir, extractor=extractor)
    log.info("imported %d OlaGPT records with extractor %r", len(records), extractor)
    tables = compute_tables(records, tie=tie, seed=seed, n_boot=n_boot)
    tables["paper_comparison"] = paper_comparison(tables)
    figs = draw_figures(tables)
    rep = Reproduction(records=records, tables=tables)
    out_dir = Path(out_dir)
    write_outputs(rep, out_dir, Path(figures_dir) if figures_dir else out_dir / "figures", figs)
    return rep
