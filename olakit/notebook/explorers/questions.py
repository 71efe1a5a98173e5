"""The question explorer: pick dataset, strategy and question, or filter (templates split; vote wrong but some
template right; unparsed answers; the questions another view selected: a heatmap cell, a McNemar pair's discordant
questions); see each template's (or compared run's) answer, why it is unparsed, its rationale and notes, the votes,
the gold answer and an agreement line, under a header naming the run's model, preset and size. Correct an extracted
answer (saved to the overrides file beside the records) and turn a question the templates got wrong into a draft
note. It reads the per-question tables of olakit.analysis.questions; ``link`` joins it to the other explorers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from olakit.analysis.questions import FILTERS, agreement_summary, filter_questions, question_tables
from olakit.analysis.tables import ordered_strategies
from olakit.analysis.verdicts import comparison_cells, outcomes_of
from olakit.answering.vote import GROUP
from olakit.data import overrides as ov
from olakit.data.datasets import check_versions
from olakit.data.loaders import dataset_ref, reading, run_questions
from olakit.data.recorded import RECORDED_MODEL, RECORDED_SOURCE, RECORDED_TEMPLATES, import_olagpt
from olakit.errors import DataError
from olakit.names import LLM_VOTE, natural_order, plural
from olakit.notebook.explorers.heatmaps import HeatmapExplorer
from olakit.notebook.explorers.html import esc, template_names, thinking_html
from olakit.notebook.parameters import where_to_look
from olakit.notebook.records import save_draft_note
from olakit.registration import Registered, registration_of
from olakit.result import ComparisonExtras, ImportExtras, RecordedExtras, Result, extras_of
from olakit.runlog import load_run, make_log
from olakit.settings import ANALYSIS, Analysis

SELECTED = "selected"
"""The filter value of the questions another view selected (QuestionExplorer.select)."""
CAUSES = {"cut_off": "cut off at the token limit", "not_an_option": "not an option", "no_answer": "no answer stated",
          "unfinished": "cut off while thinking"}  # fmt: skip
"""How the explorer says why an answer is unparsed (olakit.answering.extract.UNPARSED_CAUSES)."""


def tools_html(trace) -> str:
    """An answer's tool calls as the explorer shows them: each call's step, tool, status, input and output (a tool
    loop's), or its program, status and ``ans`` (a program template's); '' for an answer without tools."""
    found = json.loads(trace) if isinstance(trace, str) and trace.startswith("{") else {}
    if "program" in found:
        head = f"program: {found.get('status')}, ans = {found.get('ans')}"
        body = f"<pre style='white-space:pre-wrap'>{esc(found['program'])}</pre>"
        if found.get("error"):
            body += f"<p>{esc(found['error'])}</p>"
        return f"<details class='olakit-tools'><summary>{esc(head)}</summary>{body}</details>"
    if "steps" not in found or "tools" not in found:
        return ""
    rows = "".join(
        f"<tr><td>{s['step']}</td><td>{esc(s['tool'])}</td><td>{esc(s['status'])}</td>"
        f"<td><pre style='white-space:pre-wrap'>{esc(s['input'])}</pre></td>"
        f"<td><pre style='white-space:pre-wrap'>{esc(s['output'])}</pre></td></tr>"
        for s in found["steps"]
    )
    head = f"{len(found['steps'])} tool call(s), {found['calls']} model call(s), {found['stopped']}"
    table = f"<table><tr><th>step</th><th>tool</th><th>status</th><th>input</th><th>output</th></tr>{rows}</table>"
    return f"<details class='olakit-tools'><summary>{esc(head)}</summary>{table}</details>"


def _natural_positions(ids: pd.Series) -> list[int]:
    order = {v: i for i, v in enumerate(natural_order(set(ids)))}
    return sorted(range(len(ids)), key=lambda i: order[ids.iloc[i]])


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
        rule: Analysis = ANALYSIS,
        about: str = "",
        registration: Registered | None = None,
    ):
        import ipywidgets as w

        self.about = about  # the header's run description (open_explorers: from the run log)
        self.registration = registration  # its comparisons: named in the header, judged on each question shown
        self.selection: tuple[set, str] = (set(), "")
        self.questions = questions or {}
        self.notes = notes
        self.records_path = Path(records_path) if records_path else None
        self.notes_path = Path(notes_path) if notes_path else None
        self.rule = rule  # the vote order, tie and unparsed rules (default: the authors')
        self.templates = rule.order(template_names(records, templates))
        self._load(records)

        datasets = list(dict.fromkeys(self.df["dataset"]))
        self.dataset = w.Dropdown(options=datasets, value=datasets[0], description="dataset")
        self.strategy = w.Dropdown(description="strategy")
        self.filter = w.Dropdown(options=[(v, k) for k, v in FILTERS.items()], value="all", description="filter")
        self.question = w.Dropdown(description="question", layout=w.Layout(width="420px"))
        self.count = w.HTML()
        self.header = w.HTML(self._header())
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
                self.header,
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
        self.counts, self.vote = question_tables(records, self.templates, self.rule)
        self.rows = {key: g.set_index("template") for key, g in records[records["sample"] == 0].groupby(GROUP)}
        self.outcomes = outcomes_of(records, self.rule) if self.registration is not None else None

    def _on_dataset(self, *_):
        d = self.dataset.value
        options = ordered_strategies(self.counts.loc[self.counts["dataset"] == d, "notes_strategy"])
        self._quiet = True
        self.strategy.options = options
        if options and self.strategy.value not in options:
            self.strategy.value = options[0]
        self._quiet = False
        self._on_filter()

    def _header(self) -> str:
        models = list(dict.fromkeys(self.df["model"]))
        n = self.df["question_id"].nunique()
        who = esc(", ".join(map(str, models[:4])) + (f" and {len(models) - 4} more" if len(models) > 4 else ""))
        about = f" &middot; {esc(self.about)}" if self.about else ""
        family = ""
        if self.registration is not None:
            named = esc("; ".join(self.registration.comparisons))
            family = (f"<p class='olakit-registered'><b>confirmatory</b> (registered, Holm over these alone): "
                      f"{named} &middot; every other pair exploratory</p>")  # fmt: skip
        return (
            f"<p class='olakit-header'><b>{plural(len(self.templates), 'template' if len(models) == 1 else 'column')}"
            f"</b> &middot; model: {who or 'unknown'}{about} &middot; n = {plural(n, 'question')}</p>{family}"
        )

    def registered_here(self, question_id) -> list[str]:
        """What this question says in each registered comparison: which side it favours (a discordant question),
        or that both sides agree; "not in this run" for a comparison whose cells the run lacks."""
        out = []
        for text in self.registration.comparisons if self.registration is not None else ():
            a, b = comparison_cells(text, list(self.outcomes.columns), self.outcomes.mean().to_dict())
            if a not in self.outcomes.columns or b not in self.outcomes.columns:
                out.append(f"{text} [confirmatory]: not in this run")
                continue
            x, y = self.outcomes.at[question_id, a], self.outcomes.at[question_id, b]
            if pd.isna(x) or pd.isna(y):
                said = "not answered by both"
            elif bool(x) != bool(y):
                said = f"discordant: {'the first' if x else 'the second'} is right"
            else:
                said = f"both {'right' if x else 'wrong'} (concordant)"
            out.append(f"{text} [confirmatory]: {said}")
        return out

    def select(self, ids, why: str) -> None:
        """Show only the questions ``ids`` (what another view selected, e.g. a heatmap cell), named by ``why``."""
        self.selection = (set(map(str, ids)), why)
        options = [(v, k) for k, v in FILTERS.items()] + [(f"selected: {why} ({len(self.selection[0])})", SELECTED)]
        self._quiet = True
        self.filter.options = options
        self.filter.value = SELECTED
        self._quiet = False
        self._on_filter()

    def _on_filter(self, *_):
        if self._quiet:
            return
        mask = (self.counts["dataset"] == self.dataset.value) & (self.counts["notes_strategy"] == self.strategy.value)
        if self.filter.value == SELECTED:
            mask &= self.counts["question_id"].isin(self.selection[0]).to_numpy()
        else:
            mask &= filter_questions(self.counts, self.vote, self.filter.value).to_numpy()
        keys = self.counts.loc[mask, GROUP]
        keys = keys.iloc[_natural_positions(keys["question_id"])]  # test-2 before test-10
        self.keys = {self._label(k): tuple(k) for k in keys.itertuples(index=False, name=None)}
        self.count.value = f"&nbsp;{plural(len(self.keys), 'question')}"
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
        """The current question: its text and options, the gold, the vote, and each template's answer with its
        rationale and, for an answer made with tools or by a program, each tool call (tools_html)."""
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
        parts = [f"<h4>{esc(k['question_id'])} &middot; {esc(k['notes_strategy'])}</h4>"]
        if q is not None:
            opts = "".join(f"<li><b>{esc(lbl)}</b>) {esc(txt)}</li>" for lbl, txt in q.options.items())
            parts.append(f"<p class='olakit-question'>{esc(q.text)}</p><ul>{opts}</ul>")
        parts.append(
            f"<p><b>gold</b>: {esc(gold)} &middot; <b>regex vote</b>: {esc(vote)}"
            + "".join(
                f" &middot; <b>{m.replace('_', ' ')}</b>: {esc(rows.loc[m, 'extracted'])}"
                for m in (LLM_VOTE,)
                if m in rows.index
            )
            + f"</p><p class='olakit-summary'>{esc(agreement_summary(answers, gold))}</p>"
        )
        if self.registration is not None:
            said = "".join(f"<li>{esc(line)}</li>" for line in self.registered_here(k["question_id"]))
            parts.append(f"<ul class='olakit-registered'>{said}</ul>")
        body = []
        others = [t for t in rows.index if t not in self.templates]  # an LLM vote, SC, a compared run's vote
        for t in [*self.templates, *others]:
            if t not in rows.index:
                continue
            r = rows.loc[t]
            a = answers[t]
            mark = "&#10003;" if a == gold else "&#10007;"
            fixed = " (corrected)" if bool(r.get("overridden", False)) else ""
            notes = ", ".join(esc(n) for n in r["note_ids"]) or "&ndash;"
            shown = a if a is not None else f"unparsed ({CAUSES.get(r['unparsed_cause'], 'cause unknown')})"
            body.append(
                f"<tr><td>{esc(t)}{' (not voted)' if t in others else ''}</td>"
                f"<td>{esc(shown)}{fixed}</td><td>{mark}</td>"
                f"<td>{notes}</td><td><details><summary>rationale</summary>"
                f"<pre style='white-space:pre-wrap'>{esc(r['raw_output'])}</pre></details>{thinking_html(r)}"
                f"{tools_html(r.get('trace', ''))}</td></tr>"
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
            self.status.value = f"<span style='color:#b00'>{esc(exc)}</span>"

    def correct(self, template: str, label: str | None, reason: str) -> dict:
        """Save an override for the current question's ``template`` answer and show its effect."""
        if self.records_path is None:
            raise DataError("corrections need records_path (the overrides file goes beside the records)")
        key = dict(zip(GROUP, self.current()))
        q = self.questions.get(key["question_id"])
        path = ov.overrides_path(self.records_path)
        rows = self.rows[self.current()]
        if template not in rows.index:
            raise DataError(f"{template} has no answer to {key['question_id']}")
        own = {"run": rows.loc[template, "run"], "model": rows.loc[template, "model"], "template": template}
        row = ov.add_override(path, {**key, **own}, label, reason, labels=list(q.options) if q is not None else None)
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
        new_counts, new_vote = question_tables(voting, self.templates, self.rule)
        for col in new_counts.columns:
            self.counts.loc[self.counts.index[at], col] = new_counts[col].to_numpy()
        for col in ("voted", "correct"):
            self.vote.loc[self.vote.index[at], col] = new_vote[col].to_numpy()

    def _on_note(self, *_):
        try:
            note = self.draft_note()
            self.status.value = f"draft note {note.id} appended to {self.notes_path}"
        except Exception as exc:
            self.status.value = f"<span style='color:#b00'>{esc(exc)}</span>"

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
        return save_draft_note(self.notes_path, q, answers, qtype)


def open_explorers(
    records_path: str | Path = "results/explore/records.parquet",
    notes_path: str | Path = "results/explore/notes_drafts.jsonl",
    data_dir=None,
):
    """Both explorers over a records file (a live run's, an import's, a comparison's, or the OlaGPT recorded AQuA
    outputs, imported into records_path when it does not exist yet, so corrections have a home beside them), under
    the vote rule of the run log beside it (the authors' rule where there is none), with the registration its log
    holds (its comparisons confirmatory), linked: a heatmap cell opens its questions in the question
    explorer. Returns (QuestionExplorer, HeatmapExplorer)."""
    records_path = next((p for p in where_to_look(records_path) if p.is_file()), Path(records_path))
    if not records_path.is_file():
        with reading() as files:
            records = import_olagpt(data_dir)
        extras = RecordedExtras(source=RECORDED_SOURCE, model=RECORDED_MODEL, templates=list(RECORDED_TEMPLATES))
        log = make_log("recorded", kind="recorded", files=list(files), dataset=dataset_ref("aqua", None, data_dir))
        Result(records, log, extras).write(records_path.parent)
    df, run_log = load_run(records_path)
    extras = extras_of(run_log, str(records_path.parent)) if run_log is not None else None
    left_out = []
    if isinstance(extras, ImportExtras) and extras.report is not None:
        left_out = extras.report.left_out
    elif isinstance(extras, ComparisonExtras):
        left_out = extras.left_out
    df = df[~df["question_id"].isin(left_out)]  # imported runs: the questions every run answered, as the tables
    rule = vote_rule(run_log)
    ref = run_log.dataset if run_log is not None else None
    questions = {q.id: q for q in run_questions(ref, list(dict.fromkeys(df["dataset"])), data_dir)}
    check_versions(df, questions, str(records_path))
    order = getattr(extras, "templates", None)
    templates = [t for t in order if t in set(df["template"])] if order else None
    explorer = QuestionExplorer(
        df, questions, templates=templates, records_path=records_path, notes_path=notes_path, rule=rule,
        about=describe_run(run_log), registration=registration_of(run_log),
    )  # fmt: skip
    heatmaps = HeatmapExplorer(df, templates=templates, rule=rule)
    link(explorer, heatmaps)
    return explorer, heatmaps


def describe_run(run_log) -> str:
    """The explorer header's words for a run: its door, preset and what it compares or imported."""
    if run_log is None:
        return "no run log"
    parts = [f"door: {run_log.door}"]
    preset = run_log.config.get("preset")
    if preset:
        parts.append(f"preset: {preset}")
    if run_log.kind == "compare":
        parts.append(f"sources: {', '.join(s['label'] for s in run_log.extra.get('sources', []))}")
    if run_log.kind == "import":
        parts.append(f"runs: {', '.join(r['run'] for r in run_log.extra.get('report', {}).get('runs', []))}")
    return "; ".join(parts)


def link(questions: QuestionExplorer, *views) -> None:
    """Join views (HeatmapExplorer, PairExplorer) to a question explorer: a view's "Open" shows its questions there."""
    for view in views:
        view.on_open = questions.select


def vote_rule(run_log) -> Analysis:
    """The analysis settings a run's tables were computed with (its log's, vote rule included); the authors' rule
    and the default statistics for records without a log."""
    given = {k: v for k, v in (run_log.analysis if run_log is not None else {}).items() if k in Analysis.model_fields}
    return Analysis(**given) if given else ANALYSIS
