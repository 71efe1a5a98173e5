"""The thinking-template library (paper 3.5, Table 6). Template texts live as JSON files, not in code.

Built-in templates are in ``data/templates/``: turbo (no prefix: the plain prompt, the paper's baseline),
AT (E-KAR only), DT, DST, PT and ST with the paper's Table 6 texts. Users add their own by dropping a file
``NAME.json`` with ``{"name": ..., "prefix": ..., "datasets": ["aqua"] or ["*"], "title": ...}`` (optional:
``"note_prefix"``, the text the authors' note layout puts before each note's explanation, and ``"paper_position"``,
``"before"`` or ``"after"`` the question in the authors' prompts, and ``"answer": "program"``, a template whose
output is a program the sandbox runs, as the built-in ``PoT``; such a template runs only when named) into a folder
named by ``$OLAKIT_TEMPLATES_DIR`` (or passed as ``extra_dirs``); a user file overrides a built-in of the same name.

``load_templates()["ST"].prefix -> "Let's think step by step."``;
``[t.name for t in templates_for("aqua")] -> ["turbo", "DT", "DST", "PT", "ST"]``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from olakit.data.files import RESOURCES, read_library
from olakit.env import environment
from olakit.errors import DataError, lookup
from olakit.names import TURBO
from olakit.types import Template

BUILTIN_DIR = RESOURCES / "templates"
ORDER = (TURBO, "AT", "DT", "DST", "PT", "ST")
ANSWERS = ("text", "program")
"""How a template's output answers (Template.answer)."""
"""Order of the built-ins in tables (the paper's); user templates follow in name order."""


def read_template(path: Path) -> Template:
    """One template file; DataError naming the file when it is malformed."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not a readable JSON template ({exc})") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"].strip():
        raise DataError(f"{path}: a template needs a non-empty string 'name'")
    if not isinstance(obj.get("prefix"), str):
        raise DataError(f"{path}: template {obj['name']!r} needs a string 'prefix' (may be empty)")
    datasets = obj.get("datasets", ["*"])
    if isinstance(datasets, str) or not all(isinstance(d, str) for d in datasets) or not datasets:
        raise DataError(f"{path}: 'datasets' must be a non-empty list of dataset names or [\"*\"]")
    position = obj.get("paper_position", "before")
    if position not in ("before", "after"):
        raise DataError(f'{path}: \'paper_position\' must be "before" or "after" (where the authors put the text)')
    answer = obj.get("answer", "text")
    if answer not in ANSWERS:
        raise DataError(f"{path}: 'answer' must be one of {', '.join(map(repr, ANSWERS))}, not {answer!r}")
    return Template(
        name=obj["name"].strip(),
        prefix=obj["prefix"],
        datasets=tuple(datasets),
        title=str(obj.get("title", "")),
        path=str(path),
        note_prefix=str(obj.get("note_prefix", "")),
        paper_position=position,
        answer=answer,
    )


def load_templates(extra_dirs: Iterable[str | os.PathLike] = ()) -> dict[str, Template]:
    """Built-ins, then $OLAKIT_TEMPLATES_DIR, then ``extra_dirs`` (later files override earlier names)."""
    found = read_library([BUILTIN_DIR, environment().templates_dir, *extra_dirs], read_template, "templates")
    names = [n for n in ORDER if n in found] + sorted(n for n in found if n not in ORDER)
    return {n: found[n] for n in names}


def templates_for(
    dataset: str, names: Sequence[str] | None = None, extra_dirs: Iterable[str | os.PathLike] = ()
) -> list[Template]:
    """The templates to run on ``dataset``: the named ones (each must suit it), or every suitable one."""
    library = load_templates(extra_dirs)
    if names is None:  # a program template (PoT) answers by another path: only when named
        return [t for t in library.values() if t.suits(dataset) and t.answer == "text"]
    chosen = [lookup(library, n, "template") for n in names]
    unsuited = [t.name for t in chosen if not t.suits(dataset)]
    if unsuited:
        raise DataError(f"templates {unsuited} do not list dataset {dataset!r} (see their 'datasets' field)")
    return chosen
