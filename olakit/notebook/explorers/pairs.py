"""The pair explorer: exact McNemar with Holm over every pair of cells (templates under a strategy, or compared runs),
as a matrix of corrected p-values and a table sorted by them; picking a pair shows its discordant questions, and
"Open" shows them in the question explorer it is linked to (olakit.notebook.explorers.questions.link)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from olakit.analysis.compare import COMPARED
from olakit.analysis.inference import cell_outcomes, holm_matrix, paired_tests
from olakit.analysis.verdicts import registered_tables
from olakit.names import natural_order, plural
from olakit.notebook.explorers.html import esc, html_heatmap, template_names
from olakit.registration import Registered
from olakit.settings import ANALYSIS, Analysis

SHOWN = 15
"""Rows of the sorted pair table shown (every pair is in the dropdown and the matrix)."""


def _role(r) -> str:
    """ "[confirmatory] " or "[exploratory] " where the pairs have roles."""
    return f"[{r.role}] " if hasattr(r, "role") else ""


def _holm(r) -> float:
    """The Holm p a pair is judged by: over the registered family for a confirmatory one, over every pair else."""
    return r.p_holm_family if getattr(r, "role", "") == "confirmatory" else r.p_mcnemar_holm


def _shown(cell: str) -> str:
    """A cell as a person reads it: a compared condition without its strategy (every condition's is "compared")."""
    return cell.removesuffix(f" | {COMPARED}")


class PairExplorer:
    """Every pair of cells by exact McNemar with Holm; a pair's discordant questions, one side or the other. With a
    ``registration`` (a run's: ``result.registration``), each pair says whether it is
    confirmatory (registered: Holm over the family alone, ``p_holm_family``) or exploratory, registered ones first.
    ``tests``: the result's own paired tests (``report(result)["paired_tests"]``), so that the explorer and the
    tables give each pair one Holm p, over one family; without them, every pair of the records' cells (and their
    regex vote) is the family, and the table says how many pairs it holds."""

    def __init__(
        self,
        records: pd.DataFrame,
        templates: Sequence[str] | None = None,
        rule: Analysis = ANALYSIS,
        registration: Registered | None = None,
        tests: pd.DataFrame | None = None,
    ):
        import ipywidgets as w

        names = rule.order(template_names(records, templates))
        self.outcomes = cell_outcomes(records, names, rule)
        if tests is not None:  # the tables name a compared condition without its strategy; the outcomes with it
            cell = {c: c for c in self.outcomes.columns} | {_shown(c): c for c in self.outcomes.columns}
            tests = tests.assign(a=tests["a"].map(cell), b=tests["b"].map(cell))
            tests = tests.assign(_first=tests["role"] != "confirmatory") if "role" in tests else tests.assign(_first=0)
            self.tests = tests.sort_values(["_first", "p_mcnemar_holm"], kind="stable").drop(columns="_first")
        elif registration is not None:
            tests = registered_tables(records, names, registration, rule)["paired_tests"]
            tests = tests.assign(_first=tests["role"] != "confirmatory")
            self.tests = tests.sort_values(["_first", "p_mcnemar_holm"], kind="stable").drop(columns="_first")
        else:
            self.tests = paired_tests(self.outcomes, analysis=rule).sort_values("p_mcnemar_holm", kind="stable")
        self.on_open = None  # set by link(): called with (question ids, what they are)
        self.matrix = w.HTML(
            html_heatmap(
                holm_matrix(self.tests).map(lambda p: 1 - p).rename(index=_shown, columns=_shown), fmt="{:.3f}",
                vmax=1.0,
                title="1 - Holm-corrected exact McNemar p (darker: more surely different)",
            )
        )  # fmt: skip
        self.table = w.HTML(self._table())
        options = [
            (f"{_role(r)}{_shown(r.a)} vs {_shown(r.b)}: {r.a_only} / {r.b_only} discordant, "
             f"Holm p = {_holm(r):.3g}", (r.a, r.b))
            for r in self.tests.itertuples()
        ]  # fmt: skip
        self.pair = w.Dropdown(options=options, description="pair", layout=w.Layout(width="640px"))
        self.side = w.ToggleButtons(options=[("first right, second wrong", 0), ("second right, first wrong", 1)])
        self.listing = w.HTML()
        self.open_button = w.Button(description="Open in question explorer", layout=w.Layout(width="240px"))
        self.open_button.on_click(lambda _: self.open_pair())
        for c in (self.pair, self.side):
            c.observe(lambda _: self.show_pair(), "value")
        self.widget = w.VBox([self.matrix, self.table, self.pair, w.HBox([self.side, self.open_button]), self.listing])
        self.show_pair()

    def _table(self) -> str:
        cols = ["a", "b", "n", "acc_a", "acc_b", "a_only", "b_only", "p_mcnemar", "p_mcnemar_holm"]
        if "role" in self.tests:
            cols = ["role", *cols, "p_holm_family"]
        shown = self.tests[cols].head(SHOWN).assign(a=lambda t: t["a"].map(_shown), b=lambda t: t["b"].map(_shown))
        rest = len(self.tests) - len(shown)
        more = f"<p>{plural(rest, 'more pair')} in the dropdown and the matrix</p>" if rest > 0 else ""
        family = f"<p>Holm over {plural(len(self.tests), 'pair')}</p>"
        return family + shown.to_html(index=False, float_format=lambda v: f"{v:.3g}", classes="olakit-pairs") + more

    def discordant(self) -> list[str]:
        """The questions of the selected pair that only one side (the chosen one) answered correctly."""
        if not self.pair.value:
            return []
        a, b = self.pair.value
        both = self.outcomes[[a, b]].dropna()
        first, second = both[a].astype(bool), both[b].astype(bool)
        hit = (first & ~second) if self.side.value == 0 else (second & ~first)
        return natural_order(both.index[hit.to_numpy()])

    def pair_name(self) -> str:
        a, b = map(_shown, self.pair.value)
        return f"{a} right, {b} wrong" if self.side.value == 0 else f"{b} right, {a} wrong"

    def show_pair(self) -> str:
        ids = self.discordant()
        self.listing.value = (
            f"<p>{plural(len(ids), 'question')}: {esc(self.pair_name())}</p>"
            f"<p class='olakit-cell-questions'>{', '.join(esc(i) for i in ids)}</p>"
            if self.pair.value
            else "<i>no pairs</i>"
        )
        return self.listing.value

    def open_pair(self) -> list[str]:
        """Show the selected pair's discordant questions in the linked question explorer; returns their ids."""
        ids = self.discordant()
        if self.on_open is not None and self.pair.value:
            self.on_open(ids, self.pair_name())
        return ids
