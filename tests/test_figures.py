"""The figure helpers that are olakit's own: the matplotlib heatmap (Fig 12, the Holm and kappa matrices), the paper
style and the colours written out from seaborn's, and which figures import seaborn."""

import subprocess
import sys

import matplotlib

matplotlib.use("agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from olakit.analysis import figures  # noqa: E402


def _cells(ax):
    """(row, column) -> the annotation's text, read off the axes."""
    return {(int(t.get_position()[1] - 0.5), int(t.get_position()[0] - 0.5)): t.get_text() for t in ax.texts}


def test_the_heatmap_colours_and_labels_every_cell_and_leaves_missing_ones_blank():
    m = pd.DataFrame([[0.0, 0.25, np.nan], [0.5, 0.75, 1.0]], index=["r0", "r1"], columns=["a", "b", "c"])
    fig, ax = plt.subplots()
    figures.heatmap(m, ax=ax, fmt=".2f", cmap="Blues", vmin=0, vmax=1)
    texts = _cells(ax)
    assert texts == {(0, 0): "0.00", (0, 1): "0.25", (1, 0): "0.50", (1, 1): "0.75", (1, 2): "1.00"}  # no (0, 2)
    mesh = ax.collections[0]
    assert np.asarray(mesh.get_array().mask).ravel().tolist() == [False, False, True, False, False, False]
    # row 0 on top (the y axis runs down), the labels of the frame on the ticks
    assert ax.get_ylim() == (2, 0)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["r0", "r1"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    # white text on the darkest cell, dark text on the lightest (Blues: 1.0 is navy, 0.0 near white)
    colours = {(int(t.get_position()[1] - 0.5), int(t.get_position()[0] - 0.5)): t.get_color() for t in ax.texts}
    assert colours[(1, 2)] == "white" and colours[(0, 0)] != "white"
    plt.close(fig)


def test_the_fig12_heatmap_has_row_0_at_the_bottom_and_integer_counts():
    grid = pd.DataFrame([[3, 0], [1, 2]])
    fig, ax = plt.subplots()
    figures.heatmap(grid, ax=ax, fmt="d", origin="lower", cbar=False)
    assert ax.get_ylim() == (0, 2)
    assert _cells(ax) == {(0, 0): "3", (0, 1): "0", (1, 0): "1", (1, 1): "2"}
    assert len(fig.axes) == 1  # no colour bar
    plt.close(fig)


def test_a_matrix_outlines_the_registered_pairs_and_says_so():
    """figures.matrix(marked=...): each confirmatory pair outlined in both of its cells, the title says what the
    outlines mean; without marks, no outline and no such line."""
    import matplotlib.pyplot as plt
    import pandas as pd
    from matplotlib.patches import Rectangle

    from olakit.analysis import figures

    names = ["A", "B", "C"]
    m = pd.DataFrame([[1.0, 0.2, 0.5], [0.2, 1.0, 0.01], [0.5, 0.01, 1.0]], index=names, columns=names)
    tests = pd.DataFrame({"a": ["A", "A", "B"], "b": ["B", "C", "C"], "role": ["exploratory", "exploratory",
                                                                           "confirmatory"]})  # fmt: skip
    fig, (left, right) = plt.subplots(1, 2)
    figures.matrix(m, ax=left, title="p", marked=figures.confirmatory(tests))
    boxes = sorted((r.get_x(), r.get_y()) for r in left.patches if isinstance(r, Rectangle) and not r.get_fill())
    assert boxes == [(1.0, 2.0), (2.0, 1.0)]  # (column C, row B) and (column B, row C)
    assert "outlined: the registered (confirmatory) pairs" in left.get_title()
    figures.matrix(m, ax=right, title="p")
    assert not [r for r in right.patches if isinstance(r, Rectangle) and not r.get_fill()]
    assert right.get_title() == "p"
    plt.close(fig)


def test_the_paper_style_is_seaborns_paper_context_on_its_white_grid():
    """PAPER_STYLE writes out seaborn's settings so that a figure drawn with matplotlib alone need not import
    seaborn: each value is seaborn's own, but the default colormap (seaborn's "rocket" exists once it is imported)."""
    import seaborn as sns

    seaborns = {**sns.axes_style("whitegrid"), **sns.plotting_context("paper", font_scale=1.1)}
    assert seaborns.pop("image.cmap") == "rocket" and set(figures.PAPER_STYLE) == set(seaborns)
    for name, value in seaborns.items():
        mine = figures.PAPER_STYLE[name]
        assert mine == pytest.approx(value) if isinstance(value, float) else mine == value, name
    before = dict(matplotlib.rcParams)
    with figures.paper_style():
        assert matplotlib.rcParams["axes.edgecolor"] == ".8" and matplotlib.rcParams["xtick.labelsize"] == 9.68
    assert dict(matplotlib.rcParams) == before  # undone after


def test_a_figure_drawn_with_matplotlib_alone_imports_neither_seaborn_nor_scipy_stats(tmp_path):
    """A kernel that draws the accuracy intervals (method.ipynb's figure) or Fig 9 (notes_count.ipynb's) does not
    pay seaborn's import, with the scipy.stats it imports (0.8 CPU s); the template-count figure, a seaborn line
    plot, imports it."""
    code = """
import sys
import matplotlib.pyplot as plt
import pandas as pd
from olakit.analysis import figures
methods = pd.DataFrame({"method": ["ST", "DT"], "accuracy": [0.5, 0.7], "ci_low": [0.3, 0.5], "ci_high": [0.7, 0.85],
                        "n": [10, 10], "tied_with_best": [True, True]})
with figures.paper_style():
    fig, ax = plt.subplots()
    figures.accuracy_intervals(methods, ax=ax)
    fig.savefig("intervals.png")
notes = pd.DataFrame({"notes_strategy": ["zero-shot", "zero-shot", "retrieval"], "n_notes": [1, 2, 1],
                      "accuracy": [0.5, 0.6, 0.7], "ci_low": [0.3, 0.4, 0.5], "ci_high": [0.7, 0.8, 0.85]})
with figures.paper_style():
    figures.notes_count(notes)
print(sorted(m for m in ("seaborn", "scipy.stats") if m in sys.modules))
ablation = pd.DataFrame({"k": [1, 2], "mean": [0.5, 0.6], "min": [0.4, 0.5], "max": [0.6, 0.7],
                         "notes_strategy": ["zero-shot"] * 2})
with figures.paper_style():
    figures.template_count(ablation)
print(sorted(m for m in ("seaborn", "scipy.stats") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["[]", "['scipy.stats', 'seaborn']"]
    assert (tmp_path / "intervals.png").stat().st_size > 0


def test_the_colours_are_seaborns_palette_outside_a_seaborn_theme():
    """figures.colours gives what seaborn's color_palette(n_colors=n) gives under the same matplotlib settings, the
    cycle repeated where the names outnumber it, in the paper style and in a user's own colour cycle."""
    import seaborn as sns
    from cycler import cycler

    for n in (1, 3, 10, 13):
        names = [f"s{i}" for i in range(n)]
        with figures.paper_style():
            assert list(figures.colours(names).values()) == list(sns.color_palette(n_colors=n))
        with matplotlib.rc_context({"axes.prop_cycle": cycler(color=["red", "#00ff00", "0.5"])}):
            assert list(figures.colours(names).values()) == list(sns.color_palette(n_colors=n))
    assert list(figures.colours(["b", "a"])) == ["b", "a"]
