"""What the explorers share: escaping, the template list in vote order, and a matrix as a shaded HTML table."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import pandas as pd

from olakit.names import voting_templates


def template_names(df: pd.DataFrame, templates: Sequence[str] | None) -> list[str]:
    return list(templates) if templates else voting_templates(df["template"])


def esc(text) -> str:
    return html.escape(str(text))


def thinking_html(record) -> str:
    """A record's thinking, kept apart from its answer (docs/reasoning.md), folded under its own summary with the
    reasoning tokens the endpoint billed; "" for a record with neither (a model that does not reason)."""
    text = record.get("reasoning", "") or ""
    tokens = record.get("reasoning_tokens")
    counted = tokens is not None and not pd.isna(tokens)
    if not text and not counted:
        return ""
    said = f"thinking ({int(tokens)} reasoning tokens)" if counted else "thinking"
    if record.get("unparsed_cause") == "unfinished":
        said += ", cut off: no answer"
    body = f"<pre style='white-space:pre-wrap'>{esc(text)}</pre>" if text else "<i>not shown by the endpoint</i>"
    return f"<details class='olakit-thinking'><summary>{said}</summary>{body}</details>"


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
        styler = styler.set_caption(esc(title))
    return styler.to_html()
