"""File helpers every layer shares: the repository root, atomic writes, JSON and JSON Lines reading with errors
that name file and line, and writing tables as CSV.

``write_atomic(p, lambda t: t.write_text("x"))`` -> ``p``: a crash leaves the old file or none, never half a file.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from olakit.errors import DataError

PACKAGE = Path(__file__).resolve().parents[1]
RESOURCES = PACKAGE / "resources"
"""What olakit ships inside the package (so a plain ``pip install`` has it): templates, the GEEK and review prompts,
the open questions, the data manifest and the paper's printed tables."""


def _checkout() -> Path | None:
    root = PACKAGE.parent
    return root if (root / "pyproject.toml").is_file() and (root / "notebooks").is_dir() else None


CHECKOUT = _checkout()
"""The source checkout olakit runs from (an editable install), or None for an installed wheel."""
WORKDIR = CHECKOUT or Path.cwd()
"""Where relative notebook paths resolve and sweeps run: the checkout, else the current directory."""


def in_workdir(path: str | os.PathLike) -> Path:
    """A path as given when absolute, else under WORKDIR: a notebook opened from notebooks/ in JupyterLab (whose
    working directory is then notebooks/) reads and writes results/ where `make paper` and the README put them."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else WORKDIR / path


def write_atomic(path: str | os.PathLike, write) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it into place. The temporary name is
    this process's and thread's own: two writers of one path never write into one file (the last rename wins)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_tables(tables: dict, out_dir: str | os.PathLike) -> None:
    """Each DataFrame as out_dir/tables/NAME.csv (atomically); a non-default index is written too."""
    import pandas as pd

    for name, table in tables.items():
        index = not isinstance(table.index, pd.RangeIndex)
        write_atomic(Path(out_dir) / "tables" / f"{name}.csv", lambda p, t=table, i=index: t.to_csv(p, index=i))


def read_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object) for each non-blank line of a JSON Lines file."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path} line {lineno}: malformed JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise DataError(f"{path} line {lineno}: expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj


def read_json(path: Path) -> Any:
    """Load a whole JSON file; a syntax error names file and line."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} line {exc.lineno}: malformed JSON ({exc.msg} at column {exc.colno})") from None


def require(obj: dict, key: str, where: str):
    """``obj[key]`` or DataError naming the missing field and where.

    >>> require({"a": 1}, "a", "x.json line 3")
    1
    """
    if key not in obj:
        raise DataError(f"{where}: field {key!r} missing")
    return obj[key]
