"""The heatmap explorer: Fig 12 (templates correct against the largest wrong group), pairwise agreement or
Cohen's kappa, per strategy and template subset; selecting a cell lists its questions, and "Open" shows them in the
question explorer it is linked to (olakit.notebook.explorers.questions.link)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from olakit.analysis.agreement import pairwise
from olakit.analysis.questions import fig12_grid
from olakit.analysis.tables import answer_counts, ordered_strategies
from olakit.answering.vote import answer_matrix
from olakit.names import plural
from olakit.notebook.explorers.html import esc, html_heatmap, template_names
from olakit.settings import ANALYSIS, Analysis


class HeatmapExplorer:
    """Fig-12 heatmaps and template agreement; selecting a cell lists its questions."""

    METRICS = {
        "fig12": "accuracy vs incorrect consistency (Fig 12)",
        "agreement": "pairwise agreement",
        "kappa": "Cohen's kappa",
    }

    def __init__(self, records: pd.DataFrame, templates: Sequence[str] | None = None, rule: Analysis = ANALYSIS):
        import ipywidgets as w

        self.df = records[records["sample"] == 0]
        self._views: dict = {}
        self.rule = rule
        self.all_templates = rule.order(template_names(records, templates))
        strategies = ordered_strategies(self.df["notes_strategy"])
        self.strategy = w.Dropdown(options=strategies, value=strategies[0], description="strategy")
        self.metric = w.Dropdown(options=[(v, k) for k, v in self.METRICS.items()], value="fig12", description="metric")
        self.subset = w.SelectMultiple(
            options=self.all_templates,
            value=tuple(self.all_templates),
            description="templates",
            rows=min(6, len(self.all_templates)),
        )
        self.cell = w.Dropdown(description="cell", layout=w.Layout(width="420px"))
        self.map = w.HTML()
        self.listing = w.HTML()
        self.on_open = None  # set by link(): called with (question ids, what they are)
        self.open_button = w.Button(description="Open in question explorer", layout=w.Layout(width="240px"))
        self.open_button.on_click(lambda _: self.open_cell())
        for c in (self.strategy, self.metric, self.subset):
            c.observe(lambda _: self.render(), "value")
        self.cell.observe(lambda _: self.show_cell(), "value")
        self.widget = w.VBox(
            [w.HBox([self.strategy, self.metric, self.subset]), self.map, w.HBox([self.cell, self.open_button]),
             self.listing]
        )  # fmt: skip
        self.render()

    def _memo(self, key: tuple, compute):
        """Each view computed once per explorer (its records never change)."""
        if key not in self._views:
            self._views[key] = compute()
        return self._views[key]

    def _counts(self, subset: tuple) -> pd.DataFrame:
        return self._memo(
            ("counts", subset),
            lambda: answer_counts(self.df[self.df["template"].isin(subset)], list(subset), self.rule),
        )

    def _wide(self, subset: tuple, strategy: str) -> pd.DataFrame:
        def compute():
            wide, _ = answer_matrix(self.df[self.df["notes_strategy"] == strategy], list(subset))
            return wide.fillna("unparsed").astype(str)

        return self._memo(("wide", subset, strategy), compute)

    def _pairwise(self, subset: tuple, strategy: str, metric: str) -> pd.DataFrame:
        return self._memo(
            ("pairwise", subset, strategy, metric), lambda: pairwise(self.df, list(subset), strategy, metric)
        )

    def render(self) -> str:
        subset = tuple(t for t in self.all_templates if t in self.subset.value)
        if len(subset) < 2:
            self.map.value = "<i>choose at least two templates</i>"
            self.cell.options = []
            return self.map.value
        s, metric = self.strategy.value, self.metric.value
        if metric == "fig12":
            grid = fig12_grid(self._counts(subset), s)
            self.map.value = html_heatmap(
                grid.iloc[::-1],
                title=f"{s}: questions by templates correct (columns) and largest wrong group (rows)",
                row_label="wrong",
                col_label="correct",
            )
            cells = [
                (f"correct={a}, wrong={w_} ({plural(int(grid.loc[w_, a]), 'question')})", ("fig12", a, w_))
                for w_ in grid.index
                for a in grid.columns
                if grid.loc[w_, a] > 0
            ]
        else:
            m = self._pairwise(subset, s, metric)
            self.map.value = html_heatmap(m, fmt="{:.2f}", vmax=1.0, title=f"{s}: {self.METRICS[metric]}")
            cells = [
                (f"{a} vs {b}: {m.loc[a, b]:.2f}", ("pair", a, b))
                for i, a in enumerate(subset)
                for b in subset[i + 1 :]
            ]
        self.cell.options = cells
        if cells and self.cell.value is None:
            self.cell.value = cells[0][1]
        self.show_cell()
        return self.map.value

    def cell_questions(self) -> list[str]:
        """Question ids of the selected cell (a Fig-12 cell, or the questions two templates answer differently)."""
        sel = self.cell.value
        if not sel:
            return []
        subset = tuple(t for t in self.all_templates if t in self.subset.value)
        s = self.strategy.value
        if sel[0] == "fig12":
            st = self._counts(subset)
            m = (st["notes_strategy"] == s) & (st["n_correct"] == sel[1]) & (st["n_wrong_top"] == sel[2])
            return list(st.loc[m, "question_id"])
        wide = self._wide(subset, s)
        diff = wide[sel[1]] != wide[sel[2]]
        return list(wide.index.get_level_values("question_id")[diff.to_numpy()])

    def cell_name(self) -> str:
        """What the selected cell's questions are, in words."""
        sel = self.cell.value
        if not sel:
            return ""
        if sel[0] == "fig12":
            return f"{self.strategy.value}: {sel[1]} correct, largest wrong group {sel[2]}"
        return f"{self.strategy.value}: {sel[1]} and {sel[2]} answer differently"

    def open_cell(self) -> list[str]:
        """Show the selected cell's questions in the linked question explorer; returns their ids."""
        ids = self.cell_questions()
        if self.on_open is not None and self.cell.value:
            self.on_open(ids, self.cell_name())
        return ids

    def show_cell(self) -> str:
        ids = self.cell_questions()
        what = (
            "questions in this cell"
            if self.cell.value and self.cell.value[0] == "fig12"
            else "questions the two templates answer differently"
        )
        self.listing.value = (
            (f"<p>{len(ids)} {what}:</p><p class='olakit-cell-questions'>" + ", ".join(esc(i) for i in ids) + "</p>")
            if self.cell.value
            else ""
        )
        return self.listing.value
