"""ipywidgets explorers over records, thin over olakit.analysis (the only module importing ipywidgets).

- ``QuestionExplorer``: pick dataset, strategy and question, or filter (templates split; vote wrong but some
  template right; unparsed answers); see each template's answer, rationale and notes, the votes, the gold answer
  and an agreement summary. Correct an extracted answer (saved to the overrides file beside the records) and
  turn a question the templates got wrong into a draft note (appended to a notes library file).
- ``TraceExplorer``: GEEK's traces step by step (as the seed's Fig 3), with the paragraphs retrieved.
- ``HeatmapExplorer``: choose strategy, metric (Fig-12 accuracy vs incorrect consistency, pairwise agreement or
  Cohen's kappa) and template subset; selecting a cell lists its questions.

Both precompute what they show, so an interaction on the OlaGPT records (254 questions x 20 cells) takes
milliseconds (benchmarks/bench_widgets.py).
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from olakit.analysis.agreement import pairwise
from olakit.analysis.questions import FILTERS, agreement_summary, fig12_grid, filter_questions
from olakit.analysis.tables import answer_counts, ordered_strategies
from olakit.data import overrides as ov
from olakit.data.loaders import DEFAULT_SPLIT, load_questions
from olakit.data.recorded import import_olagpt
from olakit.data.records import load_records, save_records
from olakit.errors import DataError
from olakit.geek.corpus import load_corpus
from olakit.names import LLM_VOTE, voting_templates
from olakit.olagpt.config import PAPER, VoteRule
from olakit.olagpt.notes import NotesLibrary, error_reason, note_from_question
from olakit.olagpt.vote import GROUP, answer_matrix, regex_vote


def _templates(df: pd.DataFrame, templates: Sequence[str] | None) -> list[str]:
    return list(templates) if templates else voting_templates(df["template"])


def _esc(text) -> str:
    return html.escape(str(text))


class QuestionExplorer:
    """Per-question template agreement, manual correction and notes curation."""

    def __init__(
        self,
        records: pd.DataFrame,
        questions: dict | None = None,
        *,
        templates: Sequence[str] | None = None,
        notes=None,
        records_path: str | Path | None = None,
        notes_path: str | Path | None = None,
        rule: VoteRule = PAPER,
    ):
        import ipywidgets as w

        self.questions = questions or {}
        self.notes = notes
        self.records_path = Path(records_path) if records_path else None
        self.notes_path = Path(notes_path) if notes_path else None
        self.rule = rule  # the vote order, tie and unparsed rules (default: the authors')
        self.templates = rule.order(_templates(records, templates))
        self._load(records)

        datasets = list(dict.fromkeys(self.df["dataset"]))
        self.dataset = w.Dropdown(options=datasets, value=datasets[0], description="dataset")
        self.strategy = w.Dropdown(description="strategy")
        self.filter = w.Dropdown(options=[(v, k) for k, v in FILTERS.items()], value="all", description="filter")
        self.question = w.Dropdown(description="question", layout=w.Layout(width="420px"))
        self.count = w.HTML()
        self.view = w.HTML()
        self.fix_template = w.Dropdown(options=self.templates, description="template")
        self.fix_label = w.Dropdown(description="answer")
        self.fix_reason = w.Text(placeholder="why (what the model actually answered)", description="reason")
        self.fix_button = w.Button(description="Save correction", button_style="warning")
        self.note_button = w.Button(
            description="Draft note from this question", button_style="info", layout=w.Layout(width="260px")
        )
        self.status = w.HTML()
        self._quiet = False  # set while the explorer itself changes options (one redraw, not several)
        self.dataset.observe(self._on_dataset, "value")
        self.strategy.observe(lambda _: self._quiet or self._on_filter(), "value")
        self.filter.observe(self._on_filter, "value")
        self.question.observe(lambda _: self._quiet or self.render(), "value")
        self.fix_button.on_click(self._on_fix)
        self.note_button.on_click(self._on_note)
        self.widget = w.VBox(
            [
                w.HBox([self.dataset, self.strategy, self.filter]),
                w.HBox([self.question, self.count]),
                self.view,
                w.HTML("<b>Manual correction</b>"),
                w.HBox([self.fix_template, self.fix_label, self.fix_reason, self.fix_button]),
                w.HTML("<b>Notes curation</b>"),
                w.HBox([self.note_button]),
                self.status,
            ]
        )
        self._on_dataset()

    # -- data
    def _load(self, records: pd.DataFrame) -> None:
        self.df = records
        base = records[records["template"].isin(self.templates) & (records["sample"] == 0)]
        self.base = base
        self.counts = answer_counts(base, self.templates, self.rule)
        self.vote = regex_vote(base, self.templates, rule=self.rule)
        self.rows = {key: g.set_index("template") for key, g in records[records["sample"] == 0].groupby(GROUP)}

    def _on_dataset(self, *_):
        d = self.dataset.value
        options = ordered_strategies(self.counts.loc[self.counts["dataset"] == d, "notes_strategy"])
        self._quiet = True
        self.strategy.options = options
        if options and self.strategy.value not in options:
            self.strategy.value = options[0]
        self._quiet = False
        self._on_filter()

    def _on_filter(self, *_):
        mask = (self.counts["dataset"] == self.dataset.value) & (self.counts["notes_strategy"] == self.strategy.value)
        mask &= filter_questions(self.counts, self.vote, self.filter.value).to_numpy()
        keys = self.counts.loc[mask, GROUP]
        self.keys = {self._label(k): tuple(k) for k in keys.itertuples(index=False, name=None)}
        self.count.value = f"&nbsp;{len(self.keys)} questions"
        self._quiet = True
        self.question.options = list(self.keys)
        if self.keys and self.question.value not in self.keys:
            self.question.value = next(iter(self.keys))
        self._quiet = False
        self.render()

    def _label(self, key) -> str:
        k = dict(zip(GROUP, key))
        return f"{k['question_id']}" + (f" (n={k['n_notes']})" if self.counts["n_notes"].nunique() > 1 else "")

    def current(self) -> tuple | None:
        return self.keys.get(self.question.value) if self.question.value else None

    # -- view
    def render(self) -> str:
        key = self.current()
        if key is None:
            self.view.value = "<i>no question matches</i>"
            return self.view.value
        rows = self.rows[key]
        k = dict(zip(GROUP, key))
        q = self.questions.get(k["question_id"])
        gold = rows["gold"].iloc[0]
        answers = {t: rows.loc[t, "extracted"] if t in rows.index else None for t in self.templates}
        answers = {t: (None if a is None or a != a else a) for t, a in answers.items()}
        vote = self.vote.set_index(GROUP).loc[key, "voted"]
        parts = [f"<h4>{_esc(k['question_id'])} &middot; {_esc(k['notes_strategy'])}</h4>"]
        if q is not None:
            opts = "".join(f"<li><b>{_esc(lbl)}</b>) {_esc(txt)}</li>" for lbl, txt in q.options.items())
            parts.append(f"<p class='olakit-question'>{_esc(q.text)}</p><ul>{opts}</ul>")
        parts.append(
            f"<p><b>gold</b>: {_esc(gold)} &middot; <b>regex vote</b>: {_esc(vote)}"
            + "".join(
                f" &middot; <b>{m.replace('_', ' ')}</b>: {_esc(rows.loc[m, 'extracted'])}"
                for m in (LLM_VOTE,)
                if m in rows.index
            )
            + f"</p><p class='olakit-summary'>{_esc(agreement_summary(answers, gold))}</p>"
        )
        body = []
        for t in self.templates:
            if t not in rows.index:
                continue
            r = rows.loc[t]
            a = answers[t]
            mark = "&#10003;" if a == gold else "&#10007;"
            fixed = " (corrected)" if bool(r.get("overridden", False)) else ""
            notes = ", ".join(_esc(n) for n in r["note_ids"]) or "&ndash;"
            body.append(
                f"<tr><td>{_esc(t)}</td><td>{_esc(a or 'unparsed')}{fixed}</td><td>{mark}</td>"
                f"<td>{notes}</td><td><details><summary>rationale</summary>"
                f"<pre style='white-space:pre-wrap'>{_esc(r['raw_output'])}</pre></details></td></tr>"
            )
        parts.append(
            "<table class='olakit-answers'><tr><th>template</th><th>answer</th><th></th><th>notes shown</th>"
            f"<th></th></tr>{''.join(body)}</table>"
        )
        self.view.value = "".join(parts)
        labels = list(q.options) if q is not None else sorted(set(self.df["gold"]))
        self.fix_label.options = [*labels, "unparsed"]
        if self.fix_label.value is None:
            self.fix_label.value = labels[0] if labels else "unparsed"
        return self.view.value

    # -- actions
    def _on_fix(self, *_):
        try:
            self.correct(
                self.fix_template.value,
                None if self.fix_label.value == "unparsed" else self.fix_label.value,
                self.fix_reason.value,
            )
        except Exception as exc:  # shown to the user, not raised into the widget machinery
            self.status.value = f"<span style='color:#b00'>{_esc(exc)}</span>"

    def correct(self, template: str, label: str | None, reason: str) -> dict:
        """Save an override for the current question's ``template`` answer and show its effect."""
        if self.records_path is None:
            raise DataError("corrections need records_path (the overrides file goes beside the records)")
        key = dict(zip(GROUP, self.current()))
        q = self.questions.get(key["question_id"])
        path = ov.overrides_path(self.records_path)
        row = ov.add_override(
            path, {**key, "template": template}, label, reason, labels=list(q.options) if q is not None else None
        )
        self._reapply(self.current(), ov.load_overrides(path))
        self.render()
        self.status.value = f"saved: {template} on {key['question_id']} is now {label or 'unparsed'}"
        return row

    def _reapply(self, key: tuple, overrides: pd.DataFrame) -> None:
        """Apply the overrides file to one question's records, as load_records does to all, and recompute that
        question's answer counts and vote (not the whole table: an interaction stays within milliseconds)."""
        k = dict(zip(GROUP, key))
        mask = np.logical_and.reduce([(self.df[c] == v).to_numpy() for c, v in k.items()])
        one = ov.apply_overrides(ov.without_overrides(self.df[mask]), overrides)
        if "extracted_auto" not in self.df:
            self.df = self.df.assign(extracted_auto=self.df["extracted"], overridden=False)
        cols = ["extracted", "correct", "extracted_auto", "overridden"]
        self.df.loc[mask, cols] = one[cols].to_numpy()
        self.rows[key] = one.set_index("template")
        voting = one[one["template"].isin(self.templates)]
        at = np.flatnonzero(np.logical_and.reduce([(self.counts[c] == v).to_numpy() for c, v in k.items()]))
        new_counts = answer_counts(voting, self.templates, self.rule)
        new_vote = regex_vote(voting, self.templates, rule=self.rule)
        for col in new_counts.columns:
            self.counts.loc[self.counts.index[at], col] = new_counts[col].to_numpy()
        for col in ("voted", "correct"):
            self.vote.loc[self.vote.index[at], col] = new_vote[col].to_numpy()

    def _on_note(self, *_):
        try:
            note = self.draft_note()
            self.status.value = f"draft note {note.id} appended to {self.notes_path}"
        except Exception as exc:
            self.status.value = f"<span style='color:#b00'>{_esc(exc)}</span>"

    def draft_note(self):
        """Append the current question, as a draft note, to the notes library file (notes_path)."""
        if self.notes_path is None:
            raise DataError("drafting notes needs notes_path (a notes library file)")
        key = dict(zip(GROUP, self.current()))
        q = self.questions.get(key["question_id"])
        if q is None:
            raise DataError(f"question {key['question_id']} is not loaded; pass questions= to the explorer")
        rows = self.rows[self.current()]
        wrong = {t: rows.loc[t, "extracted"] for t in self.templates if t in rows.index and not rows.loc[t, "correct"]}
        if not wrong:
            raise DataError(f"every template answered {q.id} correctly; notes are for questions the model gets wrong")
        qtype = next((x for x in rows["question_type"] if x), "")
        answers = [a if isinstance(a, str) else None for a in wrong.values()]
        note = note_from_question(
            q,
            explanation=q.rationale,
            error_reason=error_reason(answers, q.gold),
            model_expert="draft (edit me)",
            llm_task_type=qtype,
            source="curated",
        )
        lib = NotesLibrary.load(self.notes_path) if self.notes_path.is_file() else NotesLibrary([])
        kept = [n for n in lib.notes if n.id != note.id]
        NotesLibrary([*kept, note], name=lib.name).save(self.notes_path)
        return note


def html_heatmap(
    m: pd.DataFrame,
    *,
    fmt: str = "{:.0f}",
    title: str = "",
    vmax: float | None = None,
    row_label: str = "",
    col_label: str = "",
) -> str:
    """A matrix as an HTML table shaded by value (pandas Styler; fast to redraw, unlike an image)."""
    vals = m.to_numpy(dtype=float)
    top = vmax if vmax is not None else (np.nanmax(vals) if np.isfinite(vals).any() else 1.0) or 1.0
    shown = m.astype(float).rename_axis(index=f"{row_label} \\ {col_label}" if row_label or col_label else None)
    styler = (
        shown.style.background_gradient(cmap="Blues", vmin=0.0, vmax=top, axis=None)
        .format(lambda v: "" if not np.isfinite(v) else fmt.format(v))
        .set_table_attributes('class="olakit-heatmap"')
        .set_properties(**{"text-align": "center", "min-width": "2.6em"})
    )
    if title:
        styler = styler.set_caption(_esc(title))
    return styler.to_html()


class HeatmapExplorer:
    """Fig-12 heatmaps and template agreement; selecting a cell lists its questions."""

    METRICS = {
        "fig12": "accuracy vs incorrect consistency (Fig 12)",
        "agreement": "pairwise agreement",
        "kappa": "Cohen's kappa",
    }

    def __init__(self, records: pd.DataFrame, templates: Sequence[str] | None = None, rule: VoteRule = PAPER):
        import ipywidgets as w

        self.df = records[records["sample"] == 0]
        self._views: dict = {}
        self.rule = rule
        self.all_templates = rule.order(_templates(records, templates))
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
        for c in (self.strategy, self.metric, self.subset):
            c.observe(lambda _: self.render(), "value")
        self.cell.observe(lambda _: self.show_cell(), "value")
        self.widget = w.VBox([w.HBox([self.strategy, self.metric, self.subset]), self.map, self.cell, self.listing])
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
                (f"correct={a}, wrong={w_} ({int(grid.loc[w_, a])} questions)", ("fig12", a, w_))
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

    def show_cell(self) -> str:
        ids = self.cell_questions()
        what = (
            "questions in this cell"
            if self.cell.value and self.cell.value[0] == "fig12"
            else "questions the two templates answer differently"
        )
        self.listing.value = (
            (f"<p>{len(ids)} {what}:</p><p class='olakit-cell-questions'>" + ", ".join(_esc(i) for i in ids) + "</p>")
            if self.cell.value
            else ""
        )
        return self.listing.value


def open_explorers(
    records_path: str | Path = "results/explore/records.parquet",
    notes_path: str | Path = "results/explore/notes_drafts.jsonl",
    data_dir=None,
):
    """Both explorers over a records file (a live run's, or the OlaGPT recorded AQuA outputs, imported into
    records_path when it does not exist yet, so corrections have a home beside them).
    Returns (QuestionExplorer, HeatmapExplorer)."""
    records_path = Path(records_path)
    if not records_path.is_file():
        save_records(import_olagpt(data_dir), records_path)
    df = load_records(records_path)
    questions = {
        q.id: q for d in dict.fromkeys(df["dataset"]) for q in load_questions(d, DEFAULT_SPLIT.get(d, "test"), data_dir)
    }
    return (QuestionExplorer(df, questions, records_path=records_path, notes_path=notes_path), HeatmapExplorer(df))


TRACE_FILTERS = {
    "all": "every question",
    "wrong": "answered wrong",
    "retrieval_changed": "answer changed by retrieval (+RE against +De)",
    "forced": "budget exhausted (final answer forced)",
}


class TraceExplorer:
    """GEEK traces: pick a row and a question (filters: wrong, answer changed by retrieval, budget exhausted) and see
    its steps as in the seed's Fig 3: each action with its prompt and output, the paragraphs retrieved and the fact
    drawn from them, the final state, and the answer against gold."""

    def __init__(self, records: pd.DataFrame, corpus=None, questions: dict | None = None):
        import ipywidgets as w

        self.df = records[records["trace"] != ""].reset_index(drop=True)
        if self.df.empty:
            raise DataError("no records with traces (run GEEK: olakit geek or notebooks/geek_ablation.ipynb)")
        self.corpus = corpus
        self.questions = questions or {}
        self._para = {pid: (t, x) for pid, t, x in zip(corpus.ids, corpus.titles, corpus.texts)} if corpus else {}
        rows = list(dict.fromkeys(self.df["row"]))
        self.row = w.Dropdown(options=rows, value=rows[-1], description="row")
        self.filter = w.Dropdown(options=[(v, k) for k, v in TRACE_FILTERS.items()], value="all", description="filter")
        self.question = w.Dropdown(description="question", layout=w.Layout(width="420px"))
        self.count = w.HTML()
        self.view = w.HTML()
        self.row.observe(lambda _: self._on_filter(), "value")
        self.filter.observe(lambda _: self._on_filter(), "value")
        self.question.observe(lambda _: self.render(), "value")
        self.widget = w.VBox([w.HBox([self.row, self.filter]), w.HBox([self.question, self.count]), self.view])
        self._on_filter()

    def matching(self) -> list[str]:
        """Question ids of the chosen row that pass the filter."""
        d = self.df[self.df["row"] == self.row.value]
        kind = self.filter.value
        if kind == "wrong":
            d = d[~d["correct"]]
        elif kind == "forced":
            d = d[[any(b["forced_final"] for b in json.loads(t)["branches"]) for t in d["trace"]]]
        elif kind == "retrieval_changed":
            by = self.df.pivot_table(index="question_id", columns="row", values="extracted", aggfunc="first")
            if {"+De", "+RE"} <= set(by.columns):
                changed = by.index[by["+De"].fillna("-") != by["+RE"].fillna("-")]
                d = d[d["question_id"].isin(changed)]
            else:
                d = d.iloc[0:0]
        return list(d["question_id"])

    def _on_filter(self):
        ids = self.matching()
        self.count.value = f"&nbsp;{len(ids)} questions"
        self.question.options = ids
        if ids and self.question.value not in ids:
            self.question.value = ids[0]
        self.render()

    def render(self) -> str:
        qid = self.question.value
        if not qid:
            self.view.value = "<i>no question matches</i>"
            return self.view.value
        rec = self.df[(self.df["row"] == self.row.value) & (self.df["question_id"] == qid)].iloc[0]
        trace = json.loads(rec["trace"])
        q = self.questions.get(qid)
        text = q.text if q else trace["branches"][0]["state"].splitlines()[0]
        verdict = "right" if rec["correct"] else "wrong"
        parts = [
            f"<h4>{_esc(qid)} &middot; {_esc(self.row.value)}</h4>",
            f"<p class='olakit-question'>{_esc(text)}</p>",
            f"<p class='olakit-summary'><b>answer</b>: {_esc(rec['extracted'] or 'unparsed')} &middot; "
            f"<b>gold</b>: {_esc(rec['gold'])} ({verdict}) &middot; {len(trace['branches'])} branch(es)</p>",
        ]
        for b in trace["branches"]:
            parts.append(
                f"<h5>branch {_esc(b['branch'])}: answer {_esc(b['answer'] or 'unparsed')}"
                + (" &middot; budget exhausted" if b["forced_final"] else "")
                + (f" &middot; {b['fallbacks']} fallback(s)" if b["fallbacks"] else "")
                + "</h5><ol class='olakit-steps'>"
            )
            for s in b["steps"]:
                label = (
                    s["action"]
                    if s["action"] != "select"
                    else f"select &rarr; {_esc(s.get('chosen'))}" + (" (fallback)" if s.get("fallback") else "")
                )
                retrieved = ""
                if s.get("retrieved"):
                    items = "".join(
                        f"<li>{_esc(pid)} ({score:.2f})"
                        + (f": {_esc(self._para[pid][1])}" if pid in self._para else "")
                        + "</li>"
                        for pid, score in s["retrieved"]
                    )
                    retrieved = f"<ul class='olakit-retrieved'>{items}</ul>"
                parts.append(
                    f"<li><b>{label}</b>: {_esc(s['output'][:300])}{retrieved}<details><summary>prompt"
                    f"</summary><pre style='white-space:pre-wrap'>{_esc(s['input'])}</pre></details></li>"
                )
            parts.append(f"</ol><pre class='olakit-state' style='white-space:pre-wrap'>{_esc(b['state'])}</pre>")
        self.view.value = "".join(parts)
        return self.view.value


def open_trace_explorer(records_path: str | Path, corpus: str = "strategyqa-facts:open", data_dir=None):
    """The trace explorer over a GEEK records file, with the corpus's paragraphs and the dataset's questions."""
    df = load_records(records_path)
    questions = {q.id: q for q in load_questions("strategyqa", "dev", data_dir)}
    questions.update({q.id: q for q in load_questions("strategyqa", "train", data_dir)})
    return TraceExplorer(df, load_corpus(corpus, data_dir), questions)


class ReviewExplorer:
    """A review loop's history per question: the outline, the step answers, each review with its scores and
    decision, each revision, and the extracted answer after every iteration (marked where it changed)."""

    def __init__(self, records: pd.DataFrame):
        import ipywidgets as w

        self.df = records
        self.finals = records[records["trace"].ne("") & records["loop"].ne("direct")]
        if self.finals.empty:
            raise DataError("no review-loop records (run olakit review or notebooks/review_loop.ipynb)")
        keys = [f"{q} ({loop})" for q, loop in zip(self.finals["question_id"], self.finals["loop"])]
        self.rows = dict(zip(keys, self.finals.index))
        self.question = w.Dropdown(options=keys, value=keys[0], description="question", layout=w.Layout(width="420px"))
        self.view = w.HTML()
        self.question.observe(lambda _: self.render(), "value")
        self.widget = w.VBox([self.question, self.view])
        self.render()

    def answers_by_iteration(self, question_id: str, loop: str) -> list[tuple[int, str | None]]:
        d = self.df[(self.df["question_id"] == question_id) & (self.df["loop"] == loop)]
        its = sorted((int(i), x) for i, x in zip(d["iteration"], d["extracted"]))
        return [(i, None if x is None or x != x else x) for i, x in its]

    def render(self) -> str:
        rec = self.finals.loc[self.rows[self.question.value]]
        h = json.loads(rec["trace"])
        loop = rec["loop"]
        its = self.answers_by_iteration(rec["question_id"], loop)
        cells = []
        for k, (i, x) in enumerate(its):
            changed = k > 0 and x != its[k - 1][1]
            cells.append(f"<td style='{'background:#fdd' if changed else ''}'>{i}: {_esc(x or 'unparsed')}</td>")
        parts = [
            f"<h4>{_esc(rec['question_id'])} &middot; {_esc(loop)}</h4>",
            f"<p class='olakit-summary'><b>gold</b>: {_esc(rec['gold'])} &middot; answers by iteration "
            f"(changes shaded):</p><table class='olakit-iterations'><tr>{''.join(cells)}</tr></table>",
            f"<details open><summary>outline ({h['steps']} steps)</summary><pre style='white-space:pre-wrap'>"
            f"{_esc(h['outline'])}</pre></details>",
        ]
        for s in h["stages"]:
            if s.get("stage", "").startswith(("step answers", "answer")):
                parts.append(
                    f"<details><summary>{_esc(s['stage'])}</summary><pre style='white-space:pre-wrap'>"
                    f"{_esc(s['output'])}</pre></details>"
                )
        for r in h["reviews"]:
            scores = ", ".join(f"{k} {v if v is not None else '?'}" for k, v in r["scores"].items())
            parts.append(
                f"<div class='olakit-review'><b>review {r['iteration']}</b>: {_esc(scores)} &rarr; "
                f"{_esc(r['decision'])}<details><summary>review text</summary><pre style='white-space:"
                f"pre-wrap'>{_esc(r['review'])}</pre></details></div>"
            )
        for i, a in enumerate(h["answers"]):
            parts.append(
                f"<details><summary>answer after iteration {i}</summary><pre style='white-space:pre-wrap'>"
                f"{_esc(a)}</pre></details>"
            )
        self.view.value = "".join(parts)
        return self.view.value
