"""What a method is, as one object: its config type, the kind of result it makes (and so its records, extras and
tables), how it runs, its cells (what a plan and a registration name) and a line about it.

The table of methods (the built-in ones, and a user's found by name) is olakit.methods; a user's stepwise method is
made by olakit.steps.stepwise. Every door (``olakit method``, the method notebook, sweeps, compare, export, the
explorers) takes a Method and nothing else about it.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass

from olakit.answering import STEPS
from olakit.errors import DataError

__all__ = ["DOOR_OPTIONS", "Method", "Stage", "named"]

DOOR_OPTIONS = ("parameters", "registration", "concurrency", "batch", "export", "announce")
"""What a door may hand a method's run besides its config and models: the door's own flags for the log, a
pre-registered family, the calls in flight, batch mode, an export file, and a function called once the roles are
resolved (the plan a command prints)."""


class named:  # noqa: N801 (used as a function: named("module:function"))
    """The function ``module:function`` names, imported when first called or inspected: the table of methods names
    its built-in runs so, and reading the table (a command's flags, ``olakit methods``) imports no method's code.

    >>> f = named("math:gcd")
    >>> f(12, 18), str(inspect.signature(named("textwrap:dedent")))
    (6, '(text)')
    """

    def __init__(self, spec: str):
        self.spec = spec

    @functools.cached_property
    def function(self) -> Callable:
        module, _, attr = self.spec.partition(":")
        return getattr(importlib.import_module(module), attr)

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self.function)

    def __call__(self, *args, **kwargs):
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"named({self.spec!r})"


@dataclass(frozen=True)
class Stage:
    """A stage of a run's plan, known before any call: its name, its calls, each call's token limit, and whether
    the count is exact (False: at most this many; the number depends on the replies)."""

    name: str
    calls: int
    max_tokens: int
    exact: bool


@dataclass(frozen=True)
class Method:
    """One method: ``run(config, models=None, **options)`` makes its Result (``options``: those of DOOR_OPTIONS its run
    takes); ``kind`` is the result's kind (olakit.result.EXTRAS: its records, extras and tables, olakit.analysis
    .report); ``cells(config)`` the conditions its tables name (``TEMPLATE:STRATEGY``, GEEK's rows);
    ``calls(config)`` its plan, the stages (Stage) of its calls when known before it runs (None: not known;
    ``olakit sweep`` prints it before any call); ``pairs`` what its paired tests compare (``cells``, ``rows``,
    ``iterations``); ``show(result)`` a run of one asked question as a person reads it (``olakit review --ask``
    prints the review loop's); ``answers`` the chain of answer-handling steps its answers go through, named as
    olakit.answering.STEPS names them (``read``, ``second stage``, ``vote``, ``score``), in that order."""

    name: str
    config: type
    kind: str
    run: Callable
    about: str = ""
    cells: Callable | None = None
    calls: Callable | None = None
    pairs: str = "cells"
    show: Callable | None = None
    answers: tuple[str, ...] = ("read", "score")

    def __post_init__(self):
        if not self.answers or [s for s in STEPS if s in self.answers] != list(self.answers):
            raise DataError(f"method {self.name}: answers={self.answers!r}: name steps of {', '.join(STEPS)}, "
                            "each once, in that order")  # fmt: skip

    def options(self) -> tuple[str, ...]:
        """The door options (DOOR_OPTIONS) its run takes."""
        params = inspect.signature(self.run).parameters
        return tuple(o for o in DOOR_OPTIONS if o in params)

    def __call__(self, config=None, models=None, **options):
        """Run it: ``config`` a config of its type or a mapping of settings (none: every default); an option its
        run does not take is one DataError, before anything runs."""
        if config is None or isinstance(config, dict):
            config = self.config(**(config or {}))
        elif not isinstance(config, self.config):
            raise DataError(f"method {self.name}: config is {type(config).__name__}; it takes {self.config.__name__}")
        given = {k: v for k, v in options.items() if v is not None}
        refused = sorted(set(given) - set(self.options()))
        if refused:
            raise DataError(f"method {self.name} does not take {', '.join(refused)} (it takes "
                            f"{', '.join(self.options()) or 'no door options'})")  # fmt: skip
        return self.run(config, models, **given)
