"""The one door: any method of the table (olakit.methods) run with a door's options, several reasoning efforts of
its config run as one grid (``effort_grid``). The CLI's ``olakit method``, ``olakit run``, ``olakit geek`` and
``olakit review`` with several efforts, ``olakit.run_method`` and the method notebook go through it.
"""

from __future__ import annotations

from olakit.analysis.compare import compare, comparison_result
from olakit.llm.client import connect
from olakit.method import Method
from olakit.methods import BUILTIN, method_of
from olakit.runlog import make_log
from olakit.runner import endpoint

__all__ = ["effort_grid", "run_method"]


def run_method(spec: str | Method, config=None, models=None, **options):
    """Run the method ``spec`` names (method_of) with ``config`` (its config type, or a mapping of its settings) and
    the door's ``options`` (olakit.method.DOOR_OPTIONS); its Result. A method of one's own is named in the run log
    (``parameters.method``), so ``olakit again`` makes it again."""
    method = method_of(spec)
    if isinstance(spec, str) and spec not in BUILTIN:
        options["parameters"] = {**(options.get("parameters") or {}), "method": spec}
    if config is None or isinstance(config, dict):
        config = method.config(**(config or {}))
    if len(getattr(config, "reasoning_effort", ())) > 1:
        return effort_grid(method, config, models, **{k: v for k, v in options.items() if v is not None})
    return method(config, models, **options)


def effort_grid(method: Method, config, models=None, **options):
    """``method`` run once per reasoning effort of ``config`` (each run its own, with its own cache keys), the runs
    compared as one grid: a ``compare`` Result whose conditions are each effort's cells (``low/ST``, ``high/ST``), its
    tables the comparison's (accuracy with intervals, usage per condition with reasoning and answer tokens, cost per
    correct answer and the unfinished rate, paired tests with Holm over every pair, variance components), each
    effort's own run log one of its parts. The runs share one client of the endpoint (unless given models, or in
    batch mode), so a parameter it refuses is learned once for the grid."""
    own = None
    if models is None and not options.get("batch") and not options.get("export"):
        concurrency = options.get("concurrency")
        own = models = connect(endpoint("answerer"), **({"concurrency": concurrency} if concurrency else {}))
    try:
        runs = {e: method(config.replace(reasoning_effort=(e,)), models, **options)
                for e in config.reasoning_effort}  # fmt: skip
    finally:
        if own is not None and hasattr(own, "close"):
            own.close()
    grid = compare([r.records for r in runs.values()], labels=list(runs))
    first = next(iter(runs.values())).log
    parameters = {**(options.get("parameters") or {}), "effort_grid": method.name}
    result = comparison_result(grid, lambda ref: make_log(
        first.door, config, kind="compare", parameters=parameters, dataset=first.dataset,
        wall_s=round(sum(r.log.wall_s or 0 for r in runs.values()), 2)))  # fmt: skip
    for effort, part in runs.items():
        result = result.with_part(f"effort={effort}", part)
    return result
