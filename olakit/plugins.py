"""A user's own object named in a setting: ``module:name``, the module importable or a ``.py`` file's path (a score
rule, a tool's function, a method)."""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path

from olakit.errors import DataError


def load_object(name: str, what: str):
    """The object ``name`` (``module:object``) names; DataError starting with ``what`` when it is not there."""
    module, _, attr = name.rpartition(":")
    if not module or not attr:
        raise DataError(f"{what} {name!r}: give module:object or file.py:object")
    try:
        if module.endswith(".py"):
            if not Path(module).is_file():
                raise ImportError(f"no file {module}")
            path = Path(module).resolve()
            loaded = _file_module(path, path.stat().st_mtime_ns)
        else:
            loaded = importlib.import_module(module)
        return getattr(loaded, attr)
    except (ImportError, AttributeError) as exc:
        raise DataError(f"{what} {name!r}: cannot import it ({type(exc).__name__}: {exc})") from None


@functools.lru_cache(maxsize=64)
def _file_module(path: Path, mtime_ns: int):
    """A ``.py`` file's module, executed once while the file is unchanged: the objects it defines (a method's config
    type) are the same objects at every door of one process."""
    found = importlib.util.spec_from_file_location(path.stem, path)
    if found is None:
        raise ImportError(f"no file {path}")
    loaded = importlib.util.module_from_spec(found)
    found.loader.exec_module(loaded)
    return loaded


def load_function(name: str, what: str) -> Callable:
    """The function ``name`` (``module:function``) names; DataError starting with ``what`` when it is not there."""
    fn = load_object(name, what)
    module, _, attr = name.rpartition(":")
    if not callable(fn):
        raise DataError(f"{what} {name!r}: {module}.{attr} is not a function")
    return fn
