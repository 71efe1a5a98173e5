"""Each figure's labels, read back from the saved figure (its PDF's text, through pypdf) as a reader sees them: the
title, the axes' labels and the legend's entries, each once, and no two of the figure's texts overlapping. Issue 53,
item 6: the cost-against-accuracy plot's labels overlapped (GEEK's printed "zeCoT-shot": zero-shot and CoT at one
point), the review figure's legend listed "direct" twice, and E-KAR's "validation (n) vs the paper's test (335)"
was replaced by the embedded model's banner. The tables are hand-made; the expected texts are written out here."""

import matplotlib

matplotlib.use("agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from olakit.analysis import figures  # noqa: E402

pypdf = pytest.importorskip("pypdf")


def saved_text(fig, path) -> str:
    """The text of the figure as saved (PDF), read back."""
    fig.savefig(path)
    return "\n".join(page.extract_text() for page in pypdf.PdfReader(path).pages)


def overlapping(fig) -> list[tuple[str, str]]:
    """Pairs of the figure's visible texts (annotations, titles, labels; tick labels aside) whose boxes overlap."""
    renderer = fig.canvas.get_renderer()
    texts = [t for ax in fig.axes for t in (*ax.texts, ax.title, ax.xaxis.label, ax.yaxis.label)]
    texts = [t for t in [*texts, *fig.texts] if t.get_visible() and t.get_text().strip()]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    return [(a, b) for i, (a, x) in enumerate(boxes) for b, y in boxes[i + 1 :] if x.overlaps(y)]


def row(method, accuracy, **more):
    return {"method": method, "accuracy": accuracy, "ci_low": max(0, accuracy - 0.1),
            "ci_high": min(1, accuracy + 0.1), "n": 20, **more}  # fmt: skip


def test_accuracy_against_cost_labels_each_point_once_and_none_overlap(tmp_path):
    """GEEK's cost table on a small run: zero-shot and CoT at one point (1 call, 0.5), +De and +RE close by."""
    table = pd.DataFrame([row("zero-shot", 0.5, calls_per_question=1.0), row("CoT", 0.5, calls_per_question=1.0),
                          row("+De", 0.55, calls_per_question=4.0), row("+RE", 0.56, calls_per_question=4.1),
                          row("Full", 0.6, calls_per_question=9.0)])  # fmt: skip
    fig, ax = plt.subplots(figsize=(6, 4))
    figures.accuracy_against_cost(table, ax=ax)
    text = saved_text(fig, tmp_path / "cost.pdf")
    assert "zero-shot, CoT" in text and "zeCoT" not in text
    assert all(text.count(m) == 1 for m in ("+De", "+RE", "Full", "Accuracy against cost", "calls per question"))
    assert overlapping(fig) == []
    plt.close(fig)


def test_the_review_figure_lists_each_loop_once_and_direct_once(tmp_path):
    table = pd.DataFrame([row("direct", 0.4, iteration=0), row("review-lite", 0.45, iteration=0),
                          row("review-lite", 0.5, iteration=1), row("review-lite", 0.55, iteration=2)])  # fmt: skip
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    figures.accuracy_by_iteration(table, ax=ax)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sorted(legend) == ["direct", "review-lite"]
    text = saved_text(fig, tmp_path / "review.pdf")
    assert text.count("direct") == 1 and text.count("review-lite") == 1
    assert "Accuracy after each review iteration (n = 20)" in text and "iteration (0: the first answer)" in text
    plt.close(fig)


def test_the_embedded_models_banner_keeps_the_figures_own_title(tmp_path):
    """E-KAR's figures say "validation (n) vs the paper's test (335)" in their suptitle; on the embedded model the
    banner is added above it, not in its place (olakit.result.stamp, which every writer calls)."""
    from olakit.result import EMBEDDED_BANNER, stamp

    fig, ax = plt.subplots()
    ax.set_title("Table 3")
    fig.suptitle("fig6_template_count: E-KAR, validation (4) vs the paper's test (335)")
    stamp(fig)
    text = saved_text(fig, tmp_path / "ekar.pdf")
    assert "validation (4) vs the paper's test (335)" in text and EMBEDDED_BANNER in text
    assert overlapping(fig) == []
    plt.close(fig)


def test_accuracy_intervals_and_notes_count_name_their_axes_and_legend(tmp_path):
    methods = pd.DataFrame([row("ST", 0.5), row("turbo", 0.4), row("regex_vote", 0.6)])
    fig, ax = plt.subplots()
    figures.accuracy_intervals(methods, ax=ax)
    text = saved_text(fig, tmp_path / "acc.pdf")
    assert all(text.count(m) == 1 for m in ("ST", "turbo", "regex_vote"))
    assert "accuracy (95% Wilson interval)" in text and "n = 20 questions every condition answered" in text
    plt.close(fig)
    cells = [(s, n, base + 0.1 * (n > 1)) for s, base in (("random", 0.4), ("retrieval", 0.5)) for n in (1, 3)]
    counts = pd.DataFrame([row("ST", a, notes_strategy=s, n_notes=n) for s, n, a in cells])
    fig, ax = plt.subplots()
    with figures.paper_style():
        figures.notes_count(counts, ax=ax)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["random", "retrieval"]
    text = saved_text(fig, tmp_path / "notes.pdf")
    assert "number of notes in the prompt (n)" in text and "Accuracy against the number of notes" in text
    assert overlapping(fig) == []
    plt.close(fig)


def test_the_effort_figures_label_every_square_and_point_once(tmp_path):
    """The effort grid's figures (issue 50) from hand-made tables: the gain heatmap writes each square's difference
    and interval, marks the significant one; the Pareto plot labels each point once, with the cells that share it,
    and says how many cells had no correct answer (no tokens per correct answer to place)."""
    gain = pd.DataFrame([
        {"effort": "low", "cell": "ST", "baseline": "turbo", "diff": 0.25, "diff_ci_low": 0.05, "diff_ci_high": 0.45,
         "significant": True},
        {"effort": "high", "cell": "ST", "baseline": "turbo", "diff": -0.05, "diff_ci_low": -0.2, "diff_ci_high": 0.1,
         "significant": False},
    ])  # fmt: skip
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    figures.template_gain(gain, ax=ax)
    text = saved_text(fig, tmp_path / "gain.pdf")
    for said in ("+0.25*", "[+0.05, +0.45]", "-0.05", "[-0.20, +0.10]", "Accuracy gain over turbo within each effort",
                 "reasoning effort", "accuracy minus turbo's"):  # fmt: skip
        assert text.count(said) == 1, said
    assert "-0.05*" not in text
    plt.close(fig)
    cells = pd.DataFrame([
        {"effort": "low", "cell": "ST", "accuracy": 0.5, "tokens_per_correct": 40.0},
        {"effort": "low", "cell": "turbo", "accuracy": 0.5, "tokens_per_correct": 40.0},
        {"effort": "high", "cell": "ST", "accuracy": 0.8, "tokens_per_correct": 300.0},
        {"effort": "high", "cell": "turbo", "accuracy": 0.0, "tokens_per_correct": None},
    ])  # fmt: skip
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    figures.effort_pareto(cells, ax=ax)
    text = saved_text(fig, tmp_path / "pareto.pdf")
    assert text.count("ST (low), turbo (low)") == 1 and text.count("ST (high)") == 1 and "turbo (high)" not in text
    assert "1 cell with none correct left out" in text
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["Pareto front", "effort high", "effort low"]
    assert overlapping(fig) == []
    plt.close(fig)
