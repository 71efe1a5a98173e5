"""The notebook runs through papermill, and is committed clean (first cell tagged parameters, no outputs)."""
from pathlib import Path

import nbformat
import pandas as pd
import papermill as pm

NB = Path(__file__).resolve().parent.parent / "notebooks" / "reproduce_olagpt.ipynb"


def test_committed_clean():
    nb = nbformat.read(NB, as_version=4)
    assert nb.cells[0].cell_type == "code" and "parameters" in nb.cells[0].metadata.get("tags", [])
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")
    assert "key" not in nb.cells[0].source.lower()


def test_runs_through_papermill(tmp_path, data_dir):
    out = tmp_path / "out"
    executed = tmp_path / "executed.ipynb"
    pm.execute_notebook(str(NB), str(executed), kernel_name="python3", progress_bar=False,
                        parameters={"data_dir": str(data_dir), "out_dir": str(out), "n_boot": 100,
                                    "tie_rule": "random", "seed": 3})
    nb = nbformat.read(executed, as_version=4)
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells)
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) == 3
    acc = pd.read_csv(out / "tables" / "accuracy.csv", index_col=0)
    assert acc.shape == (6, 4)
    assert len(list((out / "figures").glob("*.png"))) == 3
