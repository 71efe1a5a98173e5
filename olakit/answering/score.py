"""Scoring as a source did: the verdict rules an import spec names (``score``), and a tool's own verdict read.

- ``olakit`` (the default): olakit's reading of the answer (olakit.answering.read) equals the gold's.
- ``source``: the source's own verdict field (``verdict``: Inspect's and lm-eval's scorers, a ``correct`` column).
- ``exact``: the answer and the gold as given, compared as strings after stripping surrounding whitespace, as many
  papers' scripts do (``40000`` is not ``40,000``; a JSON number is compared as JSON writes it: 18.0 as ``18.0``).
- ``module:function``: your own ``function(answer, gold, row) -> bool``, a module importable on the path or a
  ``module.py`` beside the spec: ``answer`` and ``gold`` as the row gives them (the gold: the dataset's, as olakit
  reads it, where the run has none), ``row`` the whole row.

``score_rule("exact")("40000", "40,000", {})`` -> False; ``read_verdict("C")`` -> True.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from olakit.errors import DataError
from olakit.plugins import load_function

OLAKIT, SOURCE, EXACT = "olakit", "source", "exact"
RULES = (OLAKIT, SOURCE, EXACT)
"""The built-in scoring rules; any other is ``module:function``."""


def _as_given(value) -> str:
    """A value as the source wrote it: text as it is, anything else as JSON writes it."""
    return value if isinstance(value, str) else json.dumps(value)


def exact(answer, gold, row=None) -> bool:
    """String equality of the answer and the gold as given, surrounding whitespace stripped; no answer is wrong.

    >>> exact(" 18 ", 18), exact("40000", "40,000"), exact(None, "A"), exact(18.0, 18)
    (True, False, False, False)
    """
    if answer is None:
        return False
    return _as_given(answer).strip() == _as_given(gold).strip()


def score_rule(name: str) -> Callable[[object, object, dict], bool]:
    """The function of a scoring rule other than olakit's and the source's own: ``exact``, or ``module:function``
    where the module is importable or a ``.py`` file's path (an import spec's ``pot_score:equal`` with
    pot_score.py beside the spec reads as that file's path: load_import_spec).

    >>> score_rule("exact") is exact
    True
    """
    if name == EXACT:
        return exact
    module, sep, attr = name.rpartition(":")
    if not sep or not module or not attr or not attr.isidentifier():
        raise DataError(
            f"score {name!r}: one of {', '.join(RULES)}, or module:function, a function (answer, gold, row) -> bool "
            "(a source's own verdict field is named by 'verdict')"
        )
    return load_function(name, "score")


VERDICT_COLUMNS = {"olakit": "olakit_correct", "source": "source_correct"}
"""The records' column of each verdict an analysis can count (Analysis.verdict), beside their own ``correct``."""


def with_verdict(records, verdict: str = "records"):
    """``records`` with ``correct`` the ``verdict`` asked for (Analysis.verdict): ``records`` as they are; ``olakit``
    or ``source``: that column's verdict where a record has one, its own where not (olakit's own runs have no other).

    >>> import pandas as pd
    >>> df = pd.DataFrame({"correct": [True, False, True], "olakit_correct": [False, None, None],
    ...                    "source_correct": [None, True, None]})
    >>> with_verdict(df, "olakit")["correct"].tolist(), with_verdict(df, "source")["correct"].tolist()
    ([False, False, True], [True, True, True])
    """
    if verdict == "records":
        return records
    if verdict not in VERDICT_COLUMNS:
        raise DataError(f"verdict {verdict!r}: one of records, {', '.join(VERDICT_COLUMNS)}")
    column = VERDICT_COLUMNS[verdict]
    if column not in records.columns:
        return records
    other = records[column]
    chosen = [bool(o) if o is not None and o == o else bool(c) for o, c in zip(other, records["correct"])]
    return records.assign(correct=chosen).astype({"correct": "bool"})


def read_verdict(value) -> bool | None:
    """A source's own verdict as correct or not: true/false, 1/0, Inspect's ``C``/``I``; partial credit (a score
    below 1, Inspect's ``P``) is not correct; None when there is none.

    >>> [read_verdict(v) for v in (True, 0, 1.0, 0.5, "C", "I", "P", "", None, [1])]
    [True, False, True, False, True, False, False, None, None, True]
    """
    while isinstance(value, list | tuple) and value:
        value = value[0]
    if value is None or value == "" or isinstance(value, list | tuple):
        return None
    if isinstance(value, str):
        text = value.strip().upper()
        if text in ("C", "I", "P", "N"):
            return text == "C"
        if text in ("TRUE", "FALSE"):
            return text == "TRUE"
        try:
            return float(text) >= 1.0
        except ValueError:
            return None
    return float(value) >= 1.0
