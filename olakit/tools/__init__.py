"""OlaGPT's tools library (seed 000, §3.1): a tool is data, as a template is: a name, a description the index and the
model read, what its text input is, a version, and the function (``module:function``, text in, text out) that does
it.

Built-in tools are in ``resources/tools/``: ``calculator`` (exact arithmetic, olakit.tools.calculator) and ``python``
(a program run in the sandbox, olakit.tools.sandbox). Users add their own by dropping a file ``NAME.json`` with
``{"name", "description", "input", "function", "version"}`` into a folder named by ``$OLAKIT_TOOLS_DIR`` (or passed
as ``extra_dirs``); ``function`` is ``package.module:function`` or ``file.py:function`` with the ``.py`` beside the
JSON file. A user file overrides a built-in of the same name. A search engine, for a user with a network, is such a
tool (docs/tools.md shows one).

    tools = load_tools()
    tools["calculator"]("40,000 * 3%")     # '1200'

A tool's version is part of the cache key of its results: change it when its function changes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from olakit.data.files import RESOURCES
from olakit.env import environment
from olakit.errors import DataError
from olakit.plugins import load_function
from olakit.tools.errors import ToolError

BUILTIN_DIR = RESOURCES / "tools"
FIELDS = ("name", "description", "input", "function")


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input: str
    function: str
    """``module:function``: called with the input text, returns the output text (ToolError: a message for the
    model)."""
    version: str = "1"
    path: str = field(default="", compare=False)

    def load(self) -> Callable[[str], str]:
        return load_function(self.function, f"tool {self.name!r}: function")

    def __call__(self, text: str) -> str:
        result = self.load()(text)
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
    unknown = sorted(set(obj) - {*FIELDS, "version"})
    if unknown:
        raise DataError(f"{path}: unknown tool fields {unknown} (known: {', '.join((*FIELDS, 'version'))})")
    return Tool(
        name=obj["name"], description=obj["description"].strip(), input=obj["input"].strip(),
        function=f"{module}:{attr}", version=str(obj.get("version", "1")), path=str(path),
    )  # fmt: skip


def load_tools(extra_dirs: Iterable[str | os.PathLike] = ()) -> dict[str, Tool]:
    """Built-ins, then $OLAKIT_TOOLS_DIR, then ``extra_dirs`` (later files override earlier names), in name order."""
    dirs = [BUILTIN_DIR]
    if environment().tools_dir:
        dirs.append(environment().tools_dir)
    dirs += [Path(d) for d in extra_dirs]
    found: dict[str, Tool] = {}
    for d in dirs:
        if not d.is_dir():
            raise DataError(f"{d}: tools folder not found")
        for path in sorted(d.glob("*.json")):
            tool = read_tool(path)
            found[tool.name] = tool
    return dict(sorted(found.items()))
