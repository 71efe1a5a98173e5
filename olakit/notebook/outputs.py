"""What a notebook run leaves: its Result written by the one writer (olakit.result: records.parquet, what the
explorers open; tables as CSV; figures as PNG and PDF, stamped "embedded test model: plumbing, not results" when that
model made any part of it; run.json), as the notebook's own: its door ``notebook:<name>``, every parameter, and the
digest of its inputs (olakit.notebook.inputs), so a sweep keeps it while nothing it was made from changes.
"""

from __future__ import annotations

import os

import pandas as pd

from olakit.notebook.inputs import inputs
from olakit.notebook.parameters import notebook_file
from olakit.result import Result


def as_notebook(result: Result, notebook: str, parameters: dict) -> Result:
    """A result as the notebook's: its door ``notebook:<name>``, every parameter (papermill's, settings included),
    so ``olakit again`` gives the papermill call that makes it again, and the digest of its inputs."""
    log = result.log.replace(door=f"notebook:{notebook}", parameters=dict(parameters))
    made_from = inputs(notebook_file(notebook), dict(parameters), log, result.answers)
    return result.replace(log=log.replace(inputs=made_from))


def finish(
    result: Result,
    notebook: str,
    parameters: dict,
    out_dir: str | os.PathLike,
    *,
    tables: dict[str, pd.DataFrame],
    figures: dict,
    figures_dir: str | os.PathLike | None = None,
) -> Result:
    """Write the notebook's result (as_notebook) into out_dir (relative: to the kernel's working directory, the
    command's, or the notebook's own folder in JupyterLab) with its tables and figures, whole or not at all;
    returns it as written. ``figures_dir``: the figures there instead (Result.write)."""
    return as_notebook(result, notebook, parameters).write(out_dir, tables, figures, figures_dir=figures_dir)
