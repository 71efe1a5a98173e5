"""``olakit import SPEC``: runs made elsewhere imported into records (olakit.data.imported), with the comparison
tables over them (olakit.analysis.compare: accuracy with intervals per run, the vote across runs and its bounds,
exact McNemar with Holm over every pair, Cohen's and Fleiss' kappa, error overlap) and the import report, into one
folder with its run log.

``import_spec("imports/pot_aqua.yaml", "results/pot")`` -> (records, tables, log, report).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from olakit.analysis.compare import compare, comparison_tables
from olakit.data.imported import ImportReport, import_runs, load_import_spec
from olakit.data.records import save_records
from olakit.runlog import RunLog, claim_folder, make_log, records_summary, write_outputs
from olakit.settings import ANALYSIS, Analysis

DOOR = "import"


def import_spec(
    spec_path: str | Path, out_dir: str | Path, analysis: Analysis = ANALYSIS
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame], RunLog, ImportReport]:
    """Import the spec's runs, compute the tables over them (in the spec's run order) and write records.parquet,
    tables/ (with ``import_report.csv``) and run.json into ``out_dir``; nothing is written when a file is bad."""
    # the run files' and the dataset's sha256 go into the log: make_log reads them after import_runs
    spec = load_import_spec(spec_path)
    records, report = import_runs(spec)
    names = list(dict.fromkeys(records["template"]))
    # the tables compare runs question by question, over the questions every run answered (the records keep every
    # answer); the report says how many were left out
    comparison = compare([records], labels=[Path(spec_path).stem])
    tables = comparison_tables(comparison, analysis=analysis)
    report.left_out = list(tables["left_out"]["question_id"])
    report.compared = int(records["question_id"].nunique()) - len(report.left_out)
    tables["import_report"] = pd.DataFrame(
        [{k: v for k, v in r.items() if not isinstance(v, list)}
         | {"gold_conflicts": len(r["gold_conflicts"]), "score_disagreements": len(r["score_disagreements"])}
         for r in report.as_dict()["runs"]]
    )  # fmt: skip
    log = make_log(
        DOOR,
        spec,
        analysis=analysis.as_dict(),
        parameters={"spec": str(spec_path), "out": str(out_dir)},
        outputs={"records": records_summary(records)},
        extra={"import": report.as_dict(), "templates_in_vote_order": names},
    )
    out_dir = Path(out_dir)
    claim_folder(out_dir, log)
    save_records(records, out_dir / "records.parquet")
    return records, tables, write_outputs(out_dir, log, tables), report
