"""What a notebook run leaves: records.parquet (what the explorers open), tables as CSV, figures as PNG and PDF,
and its run log (run.json: olakit.runlog, the same as every other door's), written into its out_dir by ``finish``.
"""

from __future__ import annotations

import os

import pandas as pd

from olakit.data.files import in_workdir
from olakit.data.loaders import files_read
from olakit.data.provenance import sha256_cached
from olakit.data.records import save_records
from olakit.runlog import RunLog, claim_folder, records_summary, write_outputs


def notebook_log(notebook: str, parameters: dict, log: RunLog) -> RunLog:
    """A run's log as the notebook's: its door ``notebook:<name>`` and every parameter (papermill's, settings
    included), so ``olakit again`` gives the papermill call that makes it again."""
    return log.replace(door=f"notebook:{notebook}", parameters=dict(parameters))


def finish(
    out_dir: str | os.PathLike,
    notebook: str,
    parameters: dict,
    records: pd.DataFrame,
    log: RunLog,
    *,
    tables: dict[str, pd.DataFrame],
    figures: dict,
) -> RunLog:
    """Write the records (records.parquet: what the explorers open), tables (CSV), figures (PNG and PDF) and the
    run log (run.json) into out_dir; close the figures. Returns the log written."""
    out = in_workdir(out_dir)
    log = notebook_log(notebook, parameters, log).replace(
        outputs={"records": records_summary(records)}, data={str(p): sha256_cached(p) for p in files_read()}
    )
    claim_folder(out, log)
    save_records(records, out / "records.parquet")
    return write_outputs(out, log, tables, figures)


def title(text: str, log: RunLog) -> str:
    """A figure title that says when its numbers come from the embedded test model (a 0.5B model that exercises
    the plumbing; its accuracies are not results)."""
    return f"{text}\n[embedded test model: plumbing, not results]" if log.embedded else text
