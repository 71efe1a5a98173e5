"""The table of methods: one door runs any of them.

``method_of(NAME)`` is a built-in method (``olagpt``, ``geek``, ``review``, ``notes``), a method an installed package
declares under the ``olakit.methods`` entry-point group, or a user's own named ``module:object`` (the module
importable) or ``file.py:object`` (a file's path), nothing in olakit edited; ``olakit.door.run_method`` runs it
with the door's options, its Result made as every door makes it (olakit.runner, olakit.result).

    from olakit import method_of, report
    ps = method_of("ps_plus.py:method")            # a user's method: olakit.steps.stepwise(...) in a file
    res = ps({"dataset": "gsm8k", "n_questions": 5})
    report(res)["methods"]
"""

from __future__ import annotations

from importlib.metadata import entry_points

from olakit.errors import DataError
from olakit.geek.config import GeekConfig
from olakit.method import Method, named
from olakit.olagpt.config import NotesConfig, OlaGPTConfig
from olakit.plugins import load_object
from olakit.review.config import ReviewConfig

__all__ = [
    "BUILTIN",
    "ENTRY_POINTS",
    "MAIN_TABLES",
    "known_methods",
    "main_table",
    "method_of",
    "summary",
]

ENTRY_POINTS = "olakit.methods"
"""The entry-point group under which an installed package declares its methods (``name = "module:object"``)."""

BUILTIN = {
    "olagpt": Method("olagpt", OlaGPTConfig, "olagpt", named("olakit.olagpt.run:run"), "OlaGPT: thinking templates "
                     "x note strategies, votes (seeds/000)", named("olakit.olagpt.budget:planned_cells"),
                     named("olakit.olagpt.budget:planned_calls"), answers=("read", "second stage", "vote", "score")),
    "geek": Method("geek", GeekConfig, "geek", named("olakit.geek.run:run_geek"), "GEEK: actions grow a question "
                   "state until it answers (seeds/002)", lambda cfg: list(cfg.rows), pairs="rows",
                   answers=("read", "second stage", "vote", "score")),
    "review": Method("review", ReviewConfig, "review", named("olakit.review.run:run_review"), "the CoT + "
                     "self-review loop, standard or lite (seeds/003)", pairs="iterations",
                     show=named("olakit.review.run:ask_report"), answers=("read", "second stage", "score")),
    "notes": Method("notes", NotesConfig, "notes", named("olakit.olagpt.active_learning:build_notes"), "a notes "
                    "library by active learning (OlaGPT 3.4)", answers=("read", "score")),
}  # fmt: skip
"""The built-in methods, by name (the CLI's ``run``, ``geek``, ``review`` and ``notes build`` are their doors too):
each entry's config type, and its code named (olakit.method.named), imported when it runs, so that reading the
table (a command's flags) imports no method's code."""


def known_methods() -> dict[str, Method]:
    """Every method found by name: the built-in ones, then those of installed packages (entry points)."""
    found = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINTS):
        if ep.name not in found:
            found[ep.name] = _checked(ep.load(), f"entry point {ep.name} ({ep.value})")
    return found


def method_of(spec: str | Method) -> Method:
    """The method ``spec`` names: a Method as it is, a built-in's or an entry point's name, or ``module:object`` /
    ``file.py:object`` (DataError saying which forms there are when it names none)."""
    if isinstance(spec, Method):
        return spec
    if ":" in str(spec):
        return _checked(load_object(str(spec), "method"), f"method {spec!r}")
    known = known_methods()
    if spec not in known:
        raise DataError(f"method {spec!r}: not a method's name ({', '.join(known)}); a method of your own is named "
                        "module:object or file.py:object (docs/methods.md)")  # fmt: skip
    return known[spec]


def _checked(obj, where: str) -> Method:
    if not isinstance(obj, Method):
        raise DataError(f"{where}: a {type(obj).__name__}, not a Method (make one with olakit.steps(...))")
    return obj


MAIN_TABLES = {"olagpt": "methods", "geek": "table2", "review": "iteration_accuracy", "notes": "pool_answers",
               "compare": "usage"}  # fmt: skip
"""Each kind's main table: accuracy per condition (OlaGPT cells, GEEK rows, review iterations, a notes build's pool
answers; an effort grid's conditions with what each paid)."""


def main_table(result, tables: dict):
    """A result's accuracy per condition with its Wilson interval (``method`` the condition's label: a review
    iteration's is ``loop @ iteration``, an OlaGPT cell's ``template | strategy``); None for a kind without one."""
    name = MAIN_TABLES.get(result.kind)
    if name is None or name not in tables:
        return None
    table = tables[name].copy()
    if "iteration" in table:
        table["method"] = table["method"].astype(str) + " @ " + table["iteration"].astype(str)
    if "notes_strategy" in table and table["notes_strategy"].nunique() > 1:
        table["method"] = table["method"].astype(str) + " | " + table["notes_strategy"].astype(str)
    columns = ["method", "n", "correct", "accuracy", "ci_low", "ci_high"]
    columns += ["reasoning_tokens", "answer_tokens", "cost_per_correct", "unfinished_rate"]  # a grid's usage table
    return table[[c for c in columns if c in table]].reset_index(drop=True)


def summary(result, tables: dict) -> str:
    """A result's main table (main_table), for a person."""
    table = main_table(result, tables)
    if table is None:
        return f"{result.kind}: {len(result.records)} records"
    return table.round(4).to_string(index=False)
