"""Where a result came from: the manifest a run writes beside its outputs (parameters, config, model, endpoint
identity, prompt hashes, seeds, package versions, git commit; never a key) and its figures as PNG and PDF. Used by
the notebooks (olakit.notebook.outputs.finish) and by ``olakit reproduce-olagpt``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import platform
import re
import subprocess
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import pandas as pd

from olakit.data.fetch import sha256_file
from olakit.data.files import WORKDIR, write_atomic
from olakit.errors import DataError

PACKAGES = (
    "olakit",
    "openai",
    "numpy",
    "pandas",
    "scipy",
    "statsmodels",
    "scikit-learn",
    "faiss-cpu",
    "sentence-transformers",
    "torch",
    "xllamacpp",
    "papermill",
    "seaborn",
    "matplotlib",
)


def save_figure(fig, folder: str | os.PathLike, name: str) -> list[Path]:
    """NAME.png and NAME.pdf in folder (each written atomically)."""
    folder = Path(folder)
    return [
        write_atomic(folder / f"{name}.{ext}", lambda p, e=ext: fig.savefig(p, format=e, dpi=150, bbox_inches="tight"))
        for ext in ("png", "pdf")
    ]


def package_versions(names: Sequence[str] = PACKAGES) -> dict[str, str | None]:
    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = None
    return out


_HASHES: dict[tuple, str] = {}


def sha256_cached(path: str | os.PathLike) -> str:
    """A file's sha256, computed once per (path, size, mtime) in this process."""
    st = os.stat(path)
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _HASHES:
        _HASHES[key] = sha256_file(Path(path))
    return _HASHES[key]


def commit() -> str | None:
    """The git commit of the checkout olakit runs from, or None (an installed wheel, no git)."""
    try:
        return (
            subprocess.run(
                ["git", "-C", str(WORKDIR), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        return None


SECRET_NAME = re.compile(r"(^|_)(api_?key|key|secret|password|token|auth)$", re.IGNORECASE)


def manifest(notebook: str, parameters: dict, records: pd.DataFrame, info: dict) -> dict:
    """What a run used: parameters (anything named like a secret refused), model, endpoint identity, the config
    (every setting), questions, prompt hashes, seeds, package versions, python, git commit."""
    bad = [k for k, v in parameters.items() if SECRET_NAME.search(k) or (isinstance(v, str) and v.startswith("sk-"))]
    if bad:
        raise DataError(f"parameters {bad} look like secrets; keys come from the environment only")
    hashes = sorted(set(records["prompt_hash"]))
    return {
        "notebook": notebook,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "parameters": parameters,
        "source": info.get("source"),
        "model": sorted(set(records["model"])) or [info.get("model")],
        "endpoint": info.get("endpoint"),
        "calls": info.get("calls", {}),
        "config": info.get("config"),
        "n_questions": int(records["question_id"].nunique()),
        "records": len(records),
        "prompt_hashes": hashes,
        "prompts_digest": hashlib.sha256("".join(hashes).encode()).hexdigest(),
        "seeds": {k: v for k, v in parameters.items() if "seed" in k},
        "packages": package_versions(),
        "python": platform.python_version(),
        "olakit_commit": commit(),
    }
