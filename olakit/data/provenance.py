"""Where a result came from, the parts a run log (olakit.runlog) is made of: the versions of the packages that shape
results, the git commit, cached sha256 of data files, the rule that refuses secret-looking parameters, and figures
saved as PNG and PDF.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from olakit.data.files import CHECKOUT, write_atomic

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
    # "tight" once: the box bbox_inches="tight" finds (the figure's tight box plus its 0.1 in pad), drawn once and
    # given to both formats, instead of a measuring draw before each
    # (any canvas: a kernel's default backend draws through its own, not Agg's get_renderer)
    box = fig.get_tightbbox().padded(0.1)
    return [
        write_atomic(folder / f"{name}.{ext}", lambda p, e=ext: fig.savefig(p, format=e, dpi=150, bbox_inches=box))
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


_SOURCE: list[str] = []


def source_digest() -> str:
    """sha256 over olakit's own source files (their paths and bytes), computed once per process: what a result
    kept on disk depends on besides its inputs (an edited extractor is another key)."""
    if not _SOURCE:
        h = hashlib.sha256()
        root = Path(__file__).resolve().parent.parent
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
        _SOURCE.append(h.hexdigest())
    return _SOURCE[0]


def commit() -> str | None:
    """The git commit of the checkout olakit runs from, or None (an installed wheel, no git): never the commit of
    whatever repository the user's working directory is in."""
    if CHECKOUT is None:
        return None
    try:
        return (
            subprocess.run(
                ["git", "-C", str(CHECKOUT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        return None


SECRET_NAME = re.compile(r"(^|_)(api_?key|key|secret|password|token|auth)$", re.IGNORECASE)
