"""olakit: which prompting ideas make an LLM reason better (OlaGPT's templates, notes and votes; GEEK; the CoT +
self-review loop; and methods of one's own).

The public face: every name in ``__all__`` is loaded when first used, so ``import olakit`` stays cheap and the
analysis of recorded runs never imports a model client.

    import olakit
    res = olakit.run_method("geek", {"n_questions": 5})         # any method of the table, or module:object
    tables = olakit.report(res)                                  # every table of its kind
    res.write("results/geek", tables)                            # the folder whole or not at all
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_PUBLIC = {
    # methods and their doors
    "Method": "olakit.method",
    "method_of": "olakit.methods",
    "known_methods": "olakit.methods",
    "run_method": "olakit.door",
    "stepwise": "olakit.steps",
    "ask": "olakit.steps",
    "choices_line": "olakit.steps",
    "StepwiseConfig": "olakit.steps",
    "Generation": "olakit.generation",
    # the built-in methods' runs and config types, as the table of methods has them (olakit.methods.BUILTIN)
    "run_olagpt": "olagpt.run",
    "run_geek": "geek.run",
    "run_review": "review.run",
    "build_notes": "notes.run",
    "OlaGPTConfig": "olagpt.config",
    "NotesConfig": "notes.config",
    "GeekConfig": "geek.config",
    "ReviewConfig": "review.config",
    # other config types
    "CompareConfig": "olakit.analysis.config",
    "Analysis": "olakit.settings",
    "VoteRule": "olakit.settings",
    # results, tables, other runs
    "Result": "olakit.result",
    "read_result": "olakit.result",
    "report": "olakit.analysis.report",
    "compare_runs": "olakit.analysis.compare",
    "import_spec": "olakit.analysis.imports",
    # data and errors
    "Question": "olakit.types",
    "OlakitError": "olakit.errors",
    "DataError": "olakit.errors",
    "ConfigError": "olakit.config",
}
"""Each public name's module (``module:attribute`` where the names differ), or a built-in method's entry and the
attribute of it (``olagpt.config``: the table of methods' ``BUILTIN["olagpt"].config``)."""

__all__ = sorted(_PUBLIC) + ["__version__"]


def __getattr__(name: str):
    where = _PUBLIC.get(name)
    if where is None:
        raise AttributeError(f"module 'olakit' has no attribute {name!r}")
    if not where.startswith("olakit."):
        method, attr = where.split(".")
        value = getattr(importlib.import_module("olakit.methods").BUILTIN[method], attr)
        value = getattr(value, "function", value)  # a named run (olakit.method.named): the function itself
    else:
        module, _, attr = where.partition(":")
        value = getattr(importlib.import_module(module), attr or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
