"""What a notebook run leaves: records.parquet (what the explorers open), tables as CSV, figures as PNG and PDF
(each stamped "embedded test model: plumbing, not results" when that model made any part of the run), and its run
log (run.json: olakit.runlog, the same as every other door's), written into its out_dir by ``finish``.
"""

from __future__ import annotations

import os

import pandas as pd

from olakit.data.files import in_workdir
from olakit.data.loaders import files_read
from olakit.data.provenance import sha256_cached
from olakit.data.records import save_records
from olakit.registration import write_registration
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
    run log (run.json) into out_dir, and registration.json when the log holds a registration; close the figures.
    Returns the log written."""
    out = in_workdir(out_dir)
    log = notebook_log(notebook, parameters, log).replace(
        outputs={"records": records_summary(records)}, data={str(p): sha256_cached(p) for p in files_read()}
    )
    claim_folder(out, log)
    save_records(records, out / "records.parquet")
    if "registration" in log.extra:  # where the explorers find it (registration_of)
        write_registration(out, log.extra["registration"])
    if log.embedded:  # every figure a run of the embedded model made says so, whichever notebook drew it
        for fig in figures.values():
            stamp(fig)
    return write_outputs(out, log, tables, figures)


EMBEDDED_BANNER = "embedded test model: plumbing, not results"
"""What a figure made (in part) by the embedded 0.5B model says: its accuracies exercise the plumbing only."""


def stamp(fig) -> None:
    """The embedded-model banner across the top of a figure, above its own titles."""
    fig.suptitle(f"[{EMBEDDED_BANNER}]", y=1.04, fontsize=9, color="#a00")
