"""What a notebook run leaves: records.parquet (what the explorers open), tables as CSV, figures as PNG and PDF,
and manifest.json (the parameters and config, model, endpoint identity, prompt hashes, package versions, git
commit; never a key), written atomically into its out_dir by ``finish``.
"""

from __future__ import annotations

import json
import os

import pandas as pd

from olakit.data.files import in_workdir, write_atomic, write_tables
from olakit.data.provenance import manifest, save_figure
from olakit.data.records import save_records


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

    out = in_workdir(out_dir)
    save_records(records, out / "records.parquet")
    write_tables(tables, out)
    written = {name: [str(p) for p in save_figure(fig, out / "figures", name)] for name, fig in figures.items()}
    for fig in figures.values():
        plt.close(fig)
    man = manifest(notebook, parameters, records, info)
    man["tables"] = sorted(tables)
    man["figures"] = written
    write_atomic(out / "manifest.json", lambda p: p.write_text(json.dumps(man, indent=1, default=str)))
    return man


def title(text: str, info: dict) -> str:
    """A figure title that says when its numbers come from the embedded test model (a 0.5B model that exercises
    the plumbing; its accuracies are not results)."""
    return f"{text}\n[embedded test model: plumbing, not results]" if info.get("embedded") else text
