"""OlaGPT's tools library (seed 000, §3.1): a tool is data, as a template is: a name, a description the index and the
model read, what its text input is, a version, its settings, and the function (``module:function``, text in, text
out) that does it.

Built-in tools are in ``resources/tools/``: ``calculator`` (exact arithmetic, olakit.tools.calculator), ``python``
(a program run in the sandbox, olakit.tools.sandbox), and the facts and notes libraries as tools the model calls
mid-reasoning: ``facts`` (a knowledge corpus searched with the kit's retrievers,
olakit.retrieval.knowledge.search_facts) and ``notes`` (the notes library's past hard questions,
olakit.olagpt.notes.search_notes). Users add their own by
dropping a file ``NAME.json`` with ``{"name", "description", "input", "function", "version", "settings"}`` into a
folder named by ``$OLAKIT_TOOLS_DIR`` (or passed as ``extra_dirs``); ``function`` is ``package.module:function`` or
``file.py:function`` with the ``.py`` beside the JSON file, called as ``function(input, **settings)``. A user file
overrides a built-in of the same name. A search engine, for a user with a network, is such a tool (docs/tools.md
shows one).

    tools = load_tools()
    tools["calculator"]("40,000 * 3%")     # '1200'

A tool's version and settings are part of the cache key of its results: change the version when its function
changes.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from olakit.data.files import RESOURCES, read_library
from olakit.env import environment
from olakit.errors import DataError
from olakit.plugins import load_function
from olakit.tools.errors import ToolError

BUILTIN_DIR = RESOURCES / "tools"
FIELDS = ("name", "description", "input", "function")
OPTIONAL = ("version", "settings")


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input: str
    function: str
    """``module:function``: called with the input text, returns the output text (ToolError: a message for the
    model)."""
    version: str = "1"
    settings: tuple = ()
    """The function's keyword arguments, as the file gives them (``"settings": {"k": 3}``): a copy of the file with
    other settings is another tool (a corpus, a library). Part of the cache key of its results."""
    path: str = field(default="", compare=False)

    def load(self) -> Callable[[str], str]:
        return load_function(self.function, f"tool {self.name!r}: function")

    def __call__(self, text: str) -> str:
        fn, settings = self.load(), dict(self.settings)
        try:
            inspect.signature(fn).bind(text, **settings)
        except TypeError as exc:
            raise DataError(f"tool {self.name!r}: its settings {settings} do not fit {self.function} ({exc})") from None
        result = fn(text, **settings)
        if not isinstance(result, str):
            raise ToolError(f"tool {self.name!r} returned {type(result).__name__}, not text")
        return result

    def shown(self) -> str:
        """The tool as a prompt lists it: ``name[input]: description``."""
        return f"{self.name}[{self.input}]: {self.description}"


def read_tool(path: Path) -> Tool:
    """One tool file; DataError naming the file and the field when it is malformed."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not a readable JSON tool ({exc})") from None
    if not isinstance(obj, dict):
        raise DataError(f"{path}: a tool is a JSON object with {', '.join(FIELDS)}")
    for key in FIELDS:
        if not isinstance(obj.get(key), str) or not obj[key].strip():
            raise DataError(f"{path}: a tool needs a non-empty string {key!r}")
    if not obj["name"].isidentifier():
        raise DataError(f"{path}: a tool's name is one word of letters, digits and _, not {obj['name']!r}")
    module, sep, attr = obj["function"].rpartition(":")
    if not sep or not module or not attr.isidentifier():
        raise DataError(f"{path}: 'function' is module:function or file.py:function, not {obj['function']!r}")
    if module.endswith(".py") and not os.path.isabs(module):
        module = str(path.parent / module)  # a .py beside the tool's file
    unknown = sorted(set(obj) - {*FIELDS, *OPTIONAL})
    if unknown:
        raise DataError(f"{path}: unknown tool fields {unknown} (known: {', '.join((*FIELDS, *OPTIONAL))})")
    settings = obj.get("settings", {})
    if not isinstance(settings, dict) or not all(
        isinstance(k, str) and k.isidentifier() and (v is None or isinstance(v, (str, int, float, bool)))
        for k, v in settings.items()
    ):
        raise DataError(f"{path}: 'settings' is an object of the function's keyword arguments (texts, numbers)")
    return Tool(
        name=obj["name"], description=obj["description"].strip(), input=obj["input"].strip(),
        function=f"{module}:{attr}", version=str(obj.get("version", "1")),
        settings=tuple(sorted(settings.items())),
        path=str(path),
    )  # fmt: skip


def load_tools(extra_dirs: Iterable[str | os.PathLike] = ()) -> dict[str, Tool]:
    """Built-ins, then $OLAKIT_TOOLS_DIR, then ``extra_dirs`` (later files override earlier names), in name order."""
    found = read_library([BUILTIN_DIR, environment().tools_dir, *extra_dirs], read_tool, "tools")
    return dict(sorted(found.items()))
