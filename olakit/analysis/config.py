"""The settings of ``olakit compare`` and the compare_runs notebook (CompareConfig): the sources and the analysis
settings, in a module of its own so that the command line's parser reads them without importing the analysis."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from olakit.settings import Analysis


class CompareConfig(Analysis):
    """Runs side by side (``olakit compare``, notebooks/compare_runs.ipynb), with the analysis settings."""

    sources: Annotated[list[str], Field(min_length=1)]
    """The runs: run folders, records files (.parquet) or import specs (.yaml), compared question by question."""
    labels: list[str] | None = None
    """A name for each source (default: a folder's or a spec's name)."""
    vote_over: list[str] | None = None
    """A regex vote across conditions, added as a condition of its own (in the tables and every Holm family): the
    conditions it combines, or ``all`` (every condition that is not itself a vote or SC); none: no vote."""
    registration: str | None = None
    """A pre-registered family (a YAML file, docs/plan.md) whose comparisons name the conditions as the tables do
    (``"PoT/AQuA vs CoT/AQuA"``): those pairs are confirmatory in ``paired_tests`` (Holm over the family alone)
    and judged in the ``registered`` table; every other pair is exploratory. Its hash goes into the run log."""
