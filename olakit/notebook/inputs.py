"""What a notebook's result is made from, as one digest (its log's ``inputs``): the notebook's source (its cells'
text), its parameters (every setting of its config included), olakit's own code, the data files it read with their
sha256, the data directory, each role's endpoint identity, and its answers' cache keys. A sweep (or ``olakit
notebook``) keeps a result whose inputs are unchanged, every answer still in the cache, instead of executing the
notebook again (``kept``); ``--force`` makes it again.

``inputs(path, parameters, log, answers)`` is what the kernel writes; ``unchanged(path, parameters, folder)`` what a
sweep asks before it starts a kernel: the same digest, over what is there now.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from olakit.config import Config
from olakit.data.files import sha256_cached
from olakit.data.loaders import resolve_data_dir
from olakit.data.provenance import source_digest
from olakit.errors import OlakitError
from olakit.llm.cache import open_cache
from olakit.notebook.parameters import config_type, parameter_defaults, parameter_names
from olakit.result import ANSWERS
from olakit.runlog import RunLog, read_log
from olakit.runner import endpoint

_SOURCES: dict[tuple, str] = {}


def notebook_digest(path: str | os.PathLike) -> str:
    """sha256 over a notebook's cells (type and source), not its outputs or metadata: an edited cell changes it."""
    st = os.stat(path)
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _SOURCES:
        cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
        body = [[c["cell_type"], "".join(c["source"])] for c in cells]
        _SOURCES[key] = hashlib.sha256(json.dumps(body).encode()).hexdigest()
    return _SOURCES[key]


def _roles(log: RunLog) -> dict[str, str]:
    """role -> endpoint identity, over a log and its parts (a part's role named ``part/role``)."""
    out = {r: e.identity for r, e in log.roles.items()}
    for name, part in log.parts.items():
        out |= {f"{name}/{r}": i for r, i in _roles(part).items()}
    return out


def _data(log: RunLog) -> dict[str, str]:
    out = dict(log.data)
    for part in log.parts.values():
        out |= _data(part)
    return out


def digest(notebook: str, parameters: dict, data: dict, roles: dict, answers) -> str:
    """The inputs digest over its parts (module docstring)."""
    try:
        data_dir = str(resolve_data_dir())
    except OlakitError:
        data_dir = ""
    body = {
        "notebook": notebook,
        "parameters": parameters,
        "olakit": source_digest(),
        "data": sorted(data.items()),
        "data_dir": data_dir,
        "roles": sorted(roles.items()),
        "answers": hashlib.sha256("\n".join(sorted(answers)).encode()).hexdigest(),
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def inputs(path: str | os.PathLike, parameters: dict, log: RunLog, answers) -> str:
    """The digest a notebook's kernel writes into its result's log: over the result it made."""
    return digest(notebook_digest(path), parameters, _data(log), _roles(log), answers)


def expected_parameters(path: str | os.PathLike, given: dict) -> dict | None:
    """The parameters a notebook's run log will name when run with ``given`` (its parameters cell's values
    overridden, every setting of its config: olakit.notebook.parameters.configure's), or None when a parameters
    cell value is no literal (then it cannot be known before the kernel runs)."""
    names = parameter_names(path)
    defaults = parameter_defaults(path)
    if any(n not in defaults and n not in given for n in names):
        return None
    own = {n: given.get(n, defaults.get(n)) for n in names}
    kind: type[Config] | None = config_type(path, given)
    settings = kind.from_mapping({**defaults, **given}).as_dict() if kind else {}
    return json.loads(json.dumps({**own, **settings}, default=str))


def unchanged(path: str | os.PathLike, given: dict, folder: str | os.PathLike) -> bool:
    """Whether the result in ``folder`` was made from what a run of the notebook with ``given`` would be made from
    now: the same notebook source, parameters, olakit code, data files (each sha256 as it is now), endpoints, and
    answers every one of which the cache still holds."""
    try:
        log = read_log(folder)
    except OlakitError:
        return False
    if log is None or not log.inputs:
        return False
    params = expected_parameters(path, given)
    if params is None:
        return False
    data = {}
    for file in _data(log):
        if not Path(file).is_file():
            return False
        data[file] = sha256_cached(file)
    roles = {}
    for role in _roles(log):
        try:
            roles[role] = endpoint(role.rsplit("/", 1)[-1]).identity
        except OlakitError:
            return False
    keys_file = Path(folder) / ANSWERS
    keys = keys_file.read_text().split() if keys_file.is_file() else []
    if keys and not _all_cached(keys):
        return False
    return digest(notebook_digest(path), params, data, roles, keys) == log.inputs


def _all_cached(keys: list[str]) -> bool:
    cache = open_cache()
    try:
        return all(hit is not None for hit in cache.get_many(keys))
    finally:
        cache.close()
