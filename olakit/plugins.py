"""A user's own function named in a setting: ``module:function``, the module importable or a ``.py`` file's path (a
score rule, a tool's function)."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path

from olakit.errors import DataError


def load_function(name: str, what: str) -> Callable:
    """The function ``name`` (``module:function``) names; DataError starting with ``what`` when it is not there."""
    module, _, attr = name.rpartition(":")
    try:
        if module.endswith(".py"):
            found = importlib.util.spec_from_file_location(Path(module).stem, module)
            if found is None or not Path(module).is_file():
                raise ImportError(f"no file {module}")
            loaded = importlib.util.module_from_spec(found)
            found.loader.exec_module(loaded)
        else:
            loaded = importlib.import_module(module)
        fn = getattr(loaded, attr)
    except (ImportError, AttributeError) as exc:
        raise DataError(f"{what} {name!r}: cannot import it ({type(exc).__name__}: {exc})") from None
    if not callable(fn):
        raise DataError(f"{what} {name!r}: {module}.{attr} is not a function")
    return fn
