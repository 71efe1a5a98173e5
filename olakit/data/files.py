"""File helpers every layer shares: the repository root, atomic writes, JSON and JSON Lines reading with errors
that name file and line, and writing tables as CSV.

``write_atomic(p, lambda t: t.write_text("x"))`` -> ``p``: a crash leaves the old file or none, never half a file.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import os
import shutil
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
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
"""The checkout, else the current directory (where ../shared/data is looked for)."""
SHIPPED = CHECKOUT or Path(sys.prefix) / "share" / "olakit"
"""Where olakit's own notebooks/, sweeps/ and imports/ are: the checkout, or, for an installed wheel, its data files
(``share/olakit`` in the environment: pyproject's ``tool.setuptools.data-files``)."""


def find_file(
    given: str | os.PathLike, *, base: str | os.PathLike | None = None, own: str = "", suffix: str = ""
) -> Path:
    """A file named by a path or by name, by the one rule for paths: an absolute path as given; a relative one is
    the working directory's (a command line's), or, inside a file, that file's folder's (``base``); else one of
    olakit's own by its path in the repository or its name in the repository's folder ``own`` (``pot_aqua`` for
    imports/pot_aqua.yaml). DataError naming where it looked when there is none."""
    path = Path(given).expanduser()
    if path.is_absolute():
        candidates = [path]
    else:
        candidates = [Path(base) / path if base is not None else Path.cwd() / path, SHIPPED / path]
        if own and len(path.parts) == 1:
            candidates += [SHIPPED / own / path] + ([SHIPPED / own / f"{path}{suffix}"] if not path.suffix else [])
    for candidate in dict.fromkeys(candidates):
        if candidate.is_file():
            return candidate.absolute()
    looked = ", ".join(str(c) for c in dict.fromkeys(candidates))
    raise DataError(f"{given}: not found (looked at {looked})")


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_HASHES: dict[tuple, str] = {}


def sha256_cached(path: str | os.PathLike) -> str:
    """A file's sha256, computed once per (path, size, mtime) in this process."""
    st = os.stat(path)
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _HASHES:
        _HASHES[key] = sha256_file(Path(path))
    return _HASHES[key]


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


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 with RENAME_EXCHANGE); False where the system cannot."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def staging_folder(folder: str | os.PathLike) -> Path:
    """A new, empty folder beside ``folder`` to build it in (``.NAME.writing-PID-XXXX``): put in place whole by
    replace_folder, or removed."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = folder.parent / f".{folder.name}.writing-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    return staging


def replace_folder(staging: Path, folder: str | os.PathLike) -> Path:
    """Put a folder built in ``staging`` in place of ``folder`` (there or not) in one rename: where the system can
    exchange the two in one step, and else by moving the old one aside first (``recover_folder`` puts it back when
    the process died between the two renames). The old folder is removed."""
    folder = Path(folder)
    if not folder.exists():
        os.replace(staging, folder)
        return folder
    if _exchange(staging, folder):
        shutil.rmtree(staging, ignore_errors=True)  # now the old folder
        return folder
    aside = folder.parent / f".{folder.name}.replaced-{uuid.uuid4().hex[:8]}"
    os.replace(folder, aside)
    os.replace(staging, folder)
    shutil.rmtree(aside, ignore_errors=True)
    return folder


def recover_folder(folder: str | os.PathLike) -> None:
    """After a crash: a folder moved aside by replace_folder whose new one never arrived goes back in place, and
    the half-built folders of processes that are gone are removed."""
    folder = Path(folder)
    if not folder.parent.is_dir():
        return
    aside = sorted(folder.parent.glob(f".{folder.name}.replaced-*"), key=lambda p: p.stat().st_mtime)
    if aside and not folder.exists():
        os.replace(aside.pop(), folder)
    dead = [p for p in folder.parent.glob(f".{folder.name}.writing-*") if not _alive(p.name.rsplit("-", 2)[-2])]
    for stale in [*aside, *dead]:
        shutil.rmtree(stale, ignore_errors=True)


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def write_tables(tables: dict, out_dir: str | os.PathLike) -> None:
    """Each DataFrame as out_dir/tables/NAME.csv (atomically); a non-default index is written too."""
    import pandas as pd

    for name, table in tables.items():
        index = not isinstance(table.index, pd.RangeIndex) or table.index.name is not None  # a named index: kept
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
                raise DataError(f"{path} line {lineno}: malformed JSON: {json_problem(exc)}") from None
            if not isinstance(obj, dict):
                raise DataError(f"{path} line {lineno}: expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj


def json_problem(exc: json.JSONDecodeError) -> str:
    """What is wrong, and at which column, in one phrase (Python's messages end in "at" or name no place).

    >>> json_problem(json.JSONDecodeError("Unterminated string starting at", '{"a": "b', 6))
    'unterminated string starting at column 7'
    >>> json_problem(json.JSONDecodeError("Expecting value", "[1,]", 3))
    'expecting value at column 4'
    """
    msg = exc.msg[:1].lower() + exc.msg[1:]
    return f"{msg} column {exc.colno}" if msg.endswith(" at") else f"{msg} at column {exc.colno}"


def read_json(path: Path) -> Any:
    """Load a whole JSON file; a syntax error names file and line."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} line {exc.lineno}: malformed JSON: {json_problem(exc)}") from None


def require(obj: dict, key: str, where: str):
    """``obj[key]`` or DataError naming the missing field and where.

    >>> require({"a": 1}, "a", "x.json line 3")
    1
    """
    if key not in obj:
        raise DataError(f"{where}: field {key!r} missing")
    return obj[key]


def read_library(folders: Iterable, read: Callable[[Path], Any], what: str) -> dict[str, Any]:
    """Every ``*.json`` entry of ``folders`` in order (``None`` skipped), each read by ``read`` and kept by its
    ``name``, a later folder's entry overriding an earlier one's (a user's template or tool over a built-in);
    DataError for a folder that is not there."""
    found: dict[str, Any] = {}
    for folder in (Path(d) for d in folders if d is not None):
        if not folder.is_dir():
            raise DataError(f"{folder}: {what} folder not found")
        for path in sorted(folder.glob("*.json")):
            entry = read(path)
            found[entry.name] = entry
    return found
