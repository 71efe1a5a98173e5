"""The settings of ``olakit plan`` (PlanConfig), apart from olakit.plan, which computes the plan: so that the command's
flags (``olakit plan --bad``) cost the config types only, not pandas and the analysis (olakit.plan in the same module
cost 1.09 CPU s, 2.2 x a pandas import). The run planned is OlaGPT's, its config type the table of methods' entry.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from olakit.config import Config
from olakit.generation import EFFORTS
from olakit.methods import BUILTIN

OlaGPTConfig = BUILTIN["olagpt"].config
"""The config type of the run a plan prices (the table's ``olagpt`` entry)."""

RECORDED = "recorded"
"""``PlanConfig.estimates``: the OlaGPT authors' recorded gpt-3.5 outputs on AQuA."""


class PlanConfig(Config):
    """``olakit plan``: the comparisons a run is for, the power wanted, and the run itself as a part (its dataset,
    split, templates and strategies: what the questions cost, and its ``alpha``; its ``n_questions`` is not used,
    the plan finds it)."""

    comparisons: list[str] = []
    """The comparisons, each ``METHOD:STRATEGY vs METHOD:STRATEGY`` (e.g. ``DST:retrieval vs turbo:zero-shot``,
    ``regex_vote:combine vs ST:combine``); Holm corrects over all of them. With ``after``: comparisons examined
    after that run, beyond its registered ones (exploratory)."""
    after: str | None = None
    """A registered run's folder: its registered comparisons decided or not, and the ones given here, which it did
    not register, as exploratory (each appended to its changes.jsonl as a change after registration)."""
    estimates: str = RECORDED
    """Where the discordance rates come from: ``recorded`` (the OlaGPT authors' gpt-3.5 outputs on AQuA), or an
    earlier run (a run folder or a records file)."""
    delta: Annotated[float, Field(gt=0, lt=1)] | None = None
    """The accuracy difference to detect (default: the one the estimates show)."""
    power: Annotated[float, Field(gt=0, lt=1)] = 0.8
    """The power wanted for each comparison."""
    target_se: Annotated[float, Field(gt=0, lt=1)] | None = None
    """Plan from the grid's variance instead (a decision study, docs/statistics.md): the cheapest design (questions,
    repeats) whose standard error of ``target`` is at most this, from the estimates' variance components."""
    target: str = "difference:template"
    """What ``target_se`` is for: ``cell`` (one cell's accuracy), ``difference:FACET`` (two cells that differ in that
    facet, paired) or ``mean over FACET`` (the accuracy averaged over the facet's levels)."""
    effort_tokens: dict[Literal[EFFORTS], Annotated[int, Field(ge=1)]] = {  # type: ignore[valid-type]
        "minimal": 512, "low": 2048, "medium": 8192, "high": 16384}  # fmt: skip
    """The completion tokens (thinking and answer) a call of a reasoning model is priced at, per effort of the run's
    ``reasoning_effort``, each capped by the call's own token limit: an estimate, not a bound (docs/reasoning.md). An
    effort not named (``none``): the token limit."""
    run: OlaGPTConfig = OlaGPTConfig()
    """The run planned (its settings are ``olakit plan``'s flags too; its dataset, when not given, is the
    estimates run's)."""

    @model_validator(mode="after")
    def _something_to_plan(self):
        if not self.comparisons and self.after is None and self.target_se is None:
            raise ValueError("comparisons: give at least one (METHOD:STRATEGY vs METHOD:STRATEGY), or after: a run, "
                             "or target_se: a standard error to reach")  # fmt: skip
        return self
