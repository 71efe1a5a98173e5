"""``olakit import SPEC``: runs made elsewhere imported into records (olakit.data.imported) as one Result, whose
report (olakit.analysis.report) is the comparison's tables over them (olakit.analysis.compare: accuracy with
intervals per run, exact McNemar with Holm over every pair, Cohen's and Fleiss' kappa, error overlap; the vote across
runs and its bounds when the spec asks for one, ``vote_over``) and the import report.

``import_spec("imports/pot_aqua.yaml")`` -> Result; ``result.write("results/pot", report(result))``.
"""

from __future__ import annotations

from pathlib import Path

from olakit.analysis.compare import compare
from olakit.data.files import find_file
from olakit.data.imported import import_runs, load_import_spec
from olakit.data.loaders import dataset_ref, reading
from olakit.result import ImportExtras, Result
from olakit.runlog import make_log
from olakit.settings import ANALYSIS, Analysis

DOOR = "import"


def import_spec(spec_path: str | Path, analysis: Analysis = ANALYSIS, *, parameters: dict | None = None) -> Result:
    """Import the spec's runs as a Result (records, run log with the spec, the files read and the dataset, the import
    report with the questions the tables leave out); nothing is written, and a bad file is one error."""
    spec_path = find_file(spec_path, own="imports", suffix=".yaml")  # a path, or one of olakit's by name: pot_aqua
    with reading() as files:
        spec = load_import_spec(spec_path)
        records, report = import_runs(spec)
        ref = dataset_ref(spec.dataset, spec.split, spec.data_dir, spec.dataset_map)
    label = spec_path.stem
    # the tables compare runs question by question, over the questions every run answered (the records keep every
    # answer); the report says how many were left out
    left_out = compare([records], labels=[label]).shared()[1]
    report.left_out = list(left_out)
    report.compared = int(records["question_id"].nunique()) - len(left_out)
    log = make_log(
        DOOR,
        spec,
        kind="import",
        analysis=analysis.as_dict(),
        parameters={"spec": str(spec_path), "label": label, **(parameters or {})},
        files=list(files),
        dataset=ref,
    )
    return Result(records, log, ImportExtras(report=report, templates=list(dict.fromkeys(records["template"]))))
