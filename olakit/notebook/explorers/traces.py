"""The trace explorer: GEEK's traces step by step (as the seed's Fig 3), with the paragraphs retrieved."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from olakit.config import is_dataset_file
from olakit.data.loaders import load_questions, run_questions
from olakit.errors import DataError
from olakit.names import plural
from olakit.notebook.explorers.html import esc, thinking_html
from olakit.retrieval.knowledge import load_corpus
from olakit.runlog import load_run

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
        self.count.value = f"&nbsp;{plural(len(ids), 'question')}"
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
            f"<h4>{esc(qid)} &middot; {esc(self.row.value)}</h4>",
            f"<p class='olakit-question'>{esc(text)}</p>",
            f"<p class='olakit-summary'><b>answer</b>: {esc(rec['extracted'] or 'unparsed')} &middot; "
            f"<b>gold</b>: {esc(rec['gold'])} ({verdict}) &middot; {len(trace['branches'])} branch(es)</p>",
            thinking_html(rec),
        ]
        for b in trace["branches"]:
            parts.append(
                f"<h5>branch {esc(b['branch'])}: answer {esc(b['answer'] or 'unparsed')}"
                + (" &middot; budget exhausted" if b["forced_final"] else "")
                + (f" &middot; {b['fallbacks']} fallback(s)" if b["fallbacks"] else "")
                + "</h5><ol class='olakit-steps'>"
            )
            for s in b["steps"]:
                label = (
                    s["action"]
                    if s["action"] != "select"
                    else f"select &rarr; {esc(s.get('chosen'))}" + (" (fallback)" if s.get("fallback") else "")
                )
                retrieved = ""
                if s.get("retrieved"):
                    items = "".join(
                        f"<li>{esc(pid)} ({score:.2f})"
                        + (f": {esc(self._para[pid][1])}" if pid in self._para else "")
                        + "</li>"
                        for pid, score in s["retrieved"]
                    )
                    retrieved = f"<ul class='olakit-retrieved'>{items}</ul>"
                parts.append(
                    f"<li><b>{label}</b>: {esc(s['output'][:300])}{retrieved}<details><summary>prompt"
                    f"</summary><pre style='white-space:pre-wrap'>{esc(s['input'])}</pre></details></li>"
                )
            parts.append(f"</ol><pre class='olakit-state' style='white-space:pre-wrap'>{esc(b['state'])}</pre>")
        self.view.value = "".join(parts)
        return self.view.value


def open_trace_explorer(records_path: str | Path, corpus: str = "strategyqa-facts:open", data_dir=None):
    """The trace explorer over a GEEK records file, with the corpus's paragraphs and the dataset's questions."""
    df, run_log = load_run(records_path)
    ref = run_log.dataset if run_log is not None else None
    if ref is not None and is_dataset_file(ref.dataset):  # a yes/no file's run: its own questions
        found = run_questions(ref, [], data_dir)
    else:
        found = load_questions("strategyqa", "dev", data_dir) + load_questions("strategyqa", "train", data_dir)
    questions = {q.id: q for q in found}
    return TraceExplorer(df, load_corpus(corpus, data_dir, found), questions)
