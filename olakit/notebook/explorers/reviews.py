"""The review explorer: a review loop's history per question, and the iteration where its answer changed."""

from __future__ import annotations

import json

import pandas as pd

from olakit.errors import DataError
from olakit.notebook.explorers.html import esc, thinking_html


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
            cells.append(f"<td style='{'background:#fdd' if changed else ''}'>{i}: {esc(x or 'unparsed')}</td>")
        parts = [
            f"<h4>{esc(rec['question_id'])} &middot; {esc(loop)}</h4>",
            f"<p class='olakit-summary'><b>gold</b>: {esc(rec['gold'])} &middot; answers by iteration "
            f"(changes shaded):</p><table class='olakit-iterations'><tr>{''.join(cells)}</tr></table>",
            f"<details open><summary>outline ({h['steps']} steps)</summary><pre style='white-space:pre-wrap'>"
            f"{esc(h['outline'])}</pre></details>",
            thinking_html(rec),
        ]
        for s in h["stages"]:
            if s.get("stage", "").startswith(("step answers", "answer")):
                parts.append(
                    f"<details><summary>{esc(s['stage'])}</summary><pre style='white-space:pre-wrap'>"
                    f"{esc(s['output'])}</pre></details>"
                )
        for r in h["reviews"]:
            scores = ", ".join(f"{k} {v if v is not None else '?'}" for k, v in r["scores"].items())
            parts.append(
                f"<div class='olakit-review'><b>review {r['iteration']}</b>: {esc(scores)} &rarr; "
                f"{esc(r['decision'])}<details><summary>review text</summary><pre style='white-space:"
                f"pre-wrap'>{esc(r['review'])}</pre></details></div>"
            )
        for i, a in enumerate(h["answers"]):
            parts.append(
                f"<details><summary>answer after iteration {i}</summary><pre style='white-space:pre-wrap'>"
                f"{esc(a)}</pre></details>"
            )
        self.view.value = "".join(parts)
        return self.view.value
