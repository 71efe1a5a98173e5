"""Paper figures with seaborn: ``fn(data, *, ..., ax=None) -> Axes``; nothing is saved here.

Use inside ``with paper_style():`` for the common look: seaborn's paper context on its white grid, written out as
matplotlib settings (``PAPER_STYLE``), so that a figure drawn with matplotlib alone does not import seaborn, which
imports scipy.stats (0.8 CPU s of every kernel that draws). The figures that use seaborn's plots import it where they
draw; Fig 9's colours are matplotlib's cycle, as seaborn's palette gives them (``colours``). Heatmaps (Fig 12, the
Holm and kappa matrices) are drawn by ``heatmap`` with matplotlib alone: seaborn's heatmap draws the whole figure
once per call to test its tick labels for overlap, so a four-panel Fig 12 was drawn four extra times before it was
saved.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

from olakit.analysis.questions import fig12_grid
from olakit.names import BASELINES, NON_TEMPLATES, VOTES, plural


def error_bars(rows) -> np.ndarray:
    """The (below, above) lengths of accuracy error bars from an interval, never negative: at an accuracy of 0 or 1
    a Wilson bound sits on the point up to floating noise (matplotlib refuses a negative length).

    >>> error_bars({"accuracy": 1.0, "ci_low": 0.5, "ci_high": 0.9999999999999999}).tolist()
    [[0.5], [0.0]]
    """
    acc, lo, hi = (np.atleast_1d(np.asarray(rows[k], dtype=float)) for k in ("accuracy", "ci_low", "ci_high"))
    return np.clip(np.vstack([acc - lo, hi - acc]), 0, None)


# seaborn 0.13's axes_style("whitegrid") and plotting_context("paper", font_scale=1.1), value for value
# (tests/test_figures.py compares them with seaborn's own), but one: the default colormap stays matplotlib's, as
# seaborn's "rocket" exists only once seaborn is imported (the heatmaps here name theirs).
_INK, _LINE = ".15", ".8"
PAPER_STYLE = {
    "figure.facecolor": "white", "axes.facecolor": "white", "axes.edgecolor": _LINE, "axes.labelcolor": _INK,
    "text.color": _INK, "xtick.color": _INK, "ytick.color": _INK, "xtick.direction": "out", "ytick.direction": "out",
    "axes.axisbelow": True, "axes.grid": True, "grid.color": _LINE, "grid.linestyle": "-",
    "font.family": ["sans-serif"], "font.sans-serif": ["Arial", "DejaVu Sans", "Liberation Sans", "Bitstream Vera Sans",
                                                       "sans-serif"],
    "lines.solid_capstyle": "round", "patch.edgecolor": "w", "patch.force_edgecolor": True,
    "xtick.top": False, "ytick.right": False, "xtick.bottom": False, "ytick.left": False,
    **{f"axes.spines.{side}": True for side in ("left", "bottom", "right", "top")},
    # the paper context: seaborn's notebook sizes times 0.8, and the fonts times 1.1 again
    "axes.linewidth": 1.0, "grid.linewidth": 0.8, "lines.linewidth": 1.2, "lines.markersize": 4.8,
    "patch.linewidth": 0.8, "xtick.major.width": 1.0, "ytick.major.width": 1.0, "xtick.minor.width": 0.8,
    "ytick.minor.width": 0.8, "xtick.major.size": 4.8, "ytick.major.size": 4.8, "xtick.minor.size": 3.2,
    "ytick.minor.size": 3.2, "font.size": 10.56, "axes.labelsize": 10.56, "axes.titlesize": 10.56,
    "legend.title_fontsize": 10.56, "xtick.labelsize": 9.68, "ytick.labelsize": 9.68, "legend.fontsize": 9.68,
}  # fmt: skip


@contextlib.contextmanager
def paper_style():
    """The one figure style of the kit (``PAPER_STYLE``: seaborn's paper context, white grid), undone after."""
    import matplotlib as mpl

    with mpl.rc_context(PAPER_STYLE):
        yield


def colours(names) -> dict:
    """One colour per name, in order: the current matplotlib colour cycle, repeated where the names outnumber it (as
    seaborn's ``color_palette(n_colors=len(names))`` gives them outside a seaborn theme, without importing it)."""
    import matplotlib as mpl
    from matplotlib.colors import to_rgb

    cycle = [c["color"] for c in mpl.rcParams["axes.prop_cycle"]]
    return {name: to_rgb(cycle[i % len(cycle)]) for i, name in enumerate(names)}


def _ax(ax):
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(6, 4))
    return ax


def before_after_voting(long: pd.DataFrame, *, votes=VOTES, exclude=BASELINES, ax=None):
    """Fig 7: per note strategy, each template's accuracy (dots), their mean, and each vote present in ``long``
    (the regex vote and the LLM vote: bars with their 95% CIs as error bars, labelled so in the legend).

    ``long`` is tables.accuracy_long or tables.method_accuracy output.
    """
    ax = _ax(ax)
    strategies = list(dict.fromkeys(long["notes_strategy"]))
    votes = [v for v in votes if v in set(long["method"])]
    single = long[~long["method"].isin([*votes, *exclude, *NON_TEMPLATES])]
    mean = single.groupby("notes_strategy")["accuracy"].mean().loc[strategies]
    x = np.arange(len(strategies))
    width = 0.8 / (1 + len(votes))
    ax.bar(x - 0.4 + width / 2, mean.values, width, label="templates (mean)", color="#9ecae1")
    colours = ["#3182bd", "#e6550d", "#31a354"]
    for i, vote in enumerate(votes, 1):
        voted = long[long["method"] == vote].set_index("notes_strategy").reindex(strategies)
        ax.bar(
            x - 0.4 + width / 2 + i * width,
            voted["accuracy"].values,
            width,
            label=f"{vote.replace('_', ' ')} (95% CI)",
            color=colours[(i - 1) % len(colours)],
            yerr=error_bars(voted),
            capsize=3,
        )
    for i, s in enumerate(strategies):
        accs = single[single["notes_strategy"] == s]["accuracy"].to_numpy()
        ax.scatter(
            np.full(accs.size, i - 0.4 + width / 2),
            accs,
            color="black",
            s=12,
            zorder=3,
            label="single template" if i == 0 else None,
        )
    ax.set_xticks(x, strategies)
    ax.set_xlabel("note strategy")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper left", frameon=True, fontsize=8)
    n = int(long["n"].max()) if len(long) else 0
    ax.set_title(f"Accuracy before and after voting (n = {n} questions)")
    return ax


def template_count(ablation: pd.DataFrame, *, ax=None):
    """Fig 6's shape: mean vote accuracy over all subsets of k templates (line) and their min-max (band)."""
    import seaborn as sns

    ax = _ax(ax)
    ablation = ablation.copy()
    ablation["k"] = ablation["k"].astype(int)
    sns.lineplot(data=ablation, x="k", y="mean", hue="notes_strategy", marker="o", ax=ax)
    palette = colours(ablation["notes_strategy"].unique())
    for strategy, g in ablation.groupby("notes_strategy", sort=False):
        ax.fill_between(g["k"], g["min"], g["max"], alpha=0.12, color=palette[strategy])
    ax.set_xticks(sorted(ablation["k"].unique()))
    ax.set_xlabel("number of templates voting (k)")
    ax.set_ylabel("vote accuracy (mean over subsets; band = min-max)")
    ax.legend(title="note strategy")
    ax.set_title("Vote accuracy against the number of templates")
    if "sampled" in ablation and ablation["sampled"].any():
        ks = sorted(ablation.loc[ablation["sampled"], "k"].unique())
        n = int(ablation.loc[ablation["sampled"], "n_subsets"].max())
        ax.text(0.01, 0.01, f"k = {ks[0]}..{ks[-1]}: a seeded sample of {n} subsets each; others: every subset",
                transform=ax.transAxes, fontsize=7, va="bottom")  # fmt: skip
    return ax


def accuracy_intervals(methods: pd.DataFrame, *, ax=None):
    """Accuracy of each method (a compared condition, the vote) with its interval, best at the top; where the table
    says which cells are tied with the best (``tied_with_best``: not shown to differ, Holm over the comparisons
    with it), those are drawn in another colour and the legend says so."""
    ax = _ax(ax)
    t = methods.sort_values("accuracy").reset_index(drop=True)
    y = np.arange(len(t))
    tied = (
        t["tied_with_best"].fillna(False).astype(bool).to_numpy() if "tied_with_best" in t else np.zeros(len(t), bool)
    )
    for mask, colour, label in ((tied, "#e6550d", f"tied with the best ({int(tied.sum())}: Holm, not shown to differ)"),
                                (~tied, "#3182bd", "differs from the best" if tied.any() else None)):  # fmt: skip
        if mask.any():
            r = t[mask]
            ax.errorbar(r["accuracy"], y[mask], xerr=error_bars(r), fmt="o", capsize=3, color=colour, label=label)
    if tied.any():
        ax.legend(fontsize=7, loc="lower right")
    ax.set_yticks(list(y), [str(m) for m in t["method"]], fontsize=7 if len(t) > 12 else 9)
    ax.set_xlim(0, 1)
    ax.set_xlabel("accuracy (95% Wilson interval)" if len(t) else "accuracy")
    n = int(t["n"].max()) if len(t) else 0
    ax.set_title(f"Accuracy per condition (n = {n} questions every condition answered)")
    return ax


def agreement_heatmap(counts: pd.DataFrame, *, strategy: str, ax=None, cbar: bool = True):
    """Fig 12: questions counted by (templates correct, largest group agreeing on one wrong answer).

    ``counts`` is tables.answer_counts output. Cells with correct >= wrong lie on or below the
    diagonal: the regex-upper bound; strictly below it: the regex-lower bound.
    """
    ax = _ax(ax)
    grid = fig12_grid(counts, strategy)
    heatmap(grid, ax=ax, annot=True, fmt="d", cmap="Blues", cbar=cbar, square=True, annot_size=8, origin="lower")
    ax.set_xlabel("templates correct (accuracy x n)")
    ax.set_ylabel("largest wrong group (incorrect consistency x n)")
    ax.set_title(f"{strategy} (n = {int(grid.to_numpy().sum())})")
    return ax


def notes_count(table: pd.DataFrame, *, ax=None):
    """Fig 9: accuracy of one template against the number of notes, per strategy, with 95% CI bars.

    ``table``: tables.notes_count_table output (notes_strategy, n_notes, accuracy, ci_low, ci_high).
    """
    ax = _ax(ax)
    palette = colours(table["notes_strategy"].unique())
    for strategy, g in table.groupby("notes_strategy", sort=False):
        g = g.sort_values("n_notes")
        ax.errorbar(
            g["n_notes"],
            g["accuracy"],
            yerr=error_bars(g),
            marker="o",
            capsize=3,
            label=strategy,
            color=palette[strategy],
        )
    ax.set_xticks(sorted(table["n_notes"].unique()))
    ax.set_xlabel("number of notes in the prompt (n)")
    ax.set_ylabel("accuracy (95% CI)")
    ax.set_ylim(0, 1)
    ax.legend(title="note strategy")
    ax.set_title("Accuracy against the number of notes")
    return ax


def vote_types(table: pd.DataFrame, *, x: str = "notes_strategy", ax=None):
    """Figs 7-8 / Table 8: regex vote, LLM vote and the regex bounds per strategy (bars with 95% CI); with
    ``x="corpus"`` GEEK's rows per corpus setting.

    ``table``: rows method, ``x``, accuracy, ci_low, ci_high.
    """
    import seaborn as sns

    ax = _ax(ax)
    by = x
    sns.barplot(data=table, x=by, y="accuracy", hue="method", ax=ax, errorbar=None)
    methods = list(dict.fromkeys(table["method"]))
    for container, method in zip(ax.containers, methods):
        rows = table[table["method"] == method].set_index(by)
        for bar, strategy in zip(container, dict.fromkeys(table[by])):
            if strategy in rows.index:
                r = rows.loc[strategy]
                x = bar.get_x() + bar.get_width() / 2
                ax.errorbar(
                    x,
                    r["accuracy"],
                    yerr=error_bars(r),
                    color="black",
                    capsize=2,
                    lw=1,
                )
    ax.set_ylim(0, 1)
    ax.set_xlabel({"notes_strategy": "note strategy", "corpus": "corpus setting"}.get(by, by))
    ax.set_ylabel("accuracy (95% CI)")
    ax.legend(title="", fontsize=8)
    ax.set_title("Regex vote, LLM vote and the regex bounds")
    return ax


def pareto(table: pd.DataFrame, *, ax=None):
    """Cost vs accuracy per cell, the Pareto front joined by a line (cost.cost_accuracy output)."""
    import seaborn as sns

    ax = _ax(ax)
    sns.scatterplot(data=table, x="tokens_per_question", y="accuracy", hue="notes_strategy", style="method", ax=ax)
    front = table[table["pareto"]].sort_values("tokens_per_question")
    ax.plot(front["tokens_per_question"], front["accuracy"], color="black", lw=1, label="Pareto front")
    for _, r in front.iterrows():
        ax.annotate(
            f"{r['method']}",
            (r["tokens_per_question"], r["accuracy"]),
            fontsize=7,
            xytext=(3, 3),
            textcoords="offset points",
        )
    ax.set_xlabel(f"tokens per question ({table['tokens_source'].iloc[0]})" if len(table) else "tokens per question")
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=6, ncol=2)
    ax.set_title("Cost against accuracy")
    return ax


def matrix(
    m: pd.DataFrame,
    *,
    ax=None,
    title: str = "",
    fmt: str = ".2f",
    cmap: str = "viridis_r",
    annot_size: float = 9,
    marked: Sequence[tuple[str, str]] = (),
    **kwargs,
):
    """A square matrix (p-values, kappas) as a heatmap, annotated up to 12 rows; ``kwargs`` go to ``heatmap``.
    ``marked``: pairs (row, column names, either way round) outlined in black, named in the title as confirmatory
    (a pre-registered family's; every other cell is exploratory)."""
    from matplotlib.patches import Rectangle

    ax = heatmap(m, ax=ax, annot=len(m) <= 12, fmt=fmt, cmap=cmap, annot_size=annot_size, **kwargs)
    rows, cols = list(map(str, m.index)), list(map(str, m.columns))
    outlined = 0
    for a, b in marked:
        for r, c in ((a, b), (b, a)):
            if r in rows and c in cols:
                ax.add_patch(Rectangle((cols.index(c), rows.index(r)), 1, 1, fill=False, lw=2, ec="black"))
                outlined += 1
    ax.set_title(title + ("\noutlined: the registered (confirmatory) pairs; the rest exploratory" if outlined else ""))
    return ax


def confirmatory(tests: pd.DataFrame) -> list[tuple[str, str]]:
    """The pairs a paired-tests table marks confirmatory (power.mark_roles), for ``matrix(marked=...)``."""
    if "role" not in tests.columns:
        return []
    return [(a, b) for a, b, role in zip(tests["a"], tests["b"], tests["role"]) if role == "confirmatory"]


def heatmap(
    m: pd.DataFrame,
    *,
    ax=None,
    annot: bool = True,
    fmt: str = ".2f",
    cmap: str = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
    cbar: bool = True,
    cbar_kws: dict | None = None,
    square: bool = False,
    annot_size: float = 9,
    origin: str = "upper",
):
    """``m`` as coloured cells labelled by its index and columns, row 0 at the top (``origin="lower"``: at the
    bottom), each annotated with ``format(value, fmt)`` where ``annot`` (white on dark cells); missing values stay
    blank. The cells are rasterized in vector formats (their text stays text)."""
    from matplotlib.colors import to_rgba_array

    ax = _ax(ax)
    values = m.to_numpy(dtype=float)
    rows, cols = values.shape
    mesh = ax.pcolormesh(np.ma.masked_invalid(values), cmap=cmap, vmin=vmin, vmax=vmax, rasterized=True)
    ax.set(xlim=(0, cols), ylim=(0, rows) if origin == "lower" else (rows, 0))
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)
    xlabels = [str(c) for c in m.columns]
    ax.set_xticks(np.arange(cols) + 0.5, xlabels, rotation=90 if _crowded(ax, xlabels, rows, cols, square) else 0)
    ax.set_yticks(np.arange(rows) + 0.5, [str(i) for i in m.index], va="center")
    ax.tick_params(length=0)
    if m.columns.name:
        ax.set_xlabel(m.columns.name)
    if m.index.name:
        ax.set_ylabel(m.index.name)
    if square:
        ax.set_aspect("equal")
    if cbar:
        ax.figure.colorbar(mesh, ax=ax, **(cbar_kws or {})).outline.set_linewidth(0)
    if annot:
        rgb = to_rgba_array(mesh.cmap(mesh.norm(values.ravel())))[:, :3]
        linear = np.where(rgb <= 0.03928, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
        dark = (linear @ np.array([0.2126, 0.7152, 0.0722])).reshape(rows, cols) < 0.408
        for i, j in zip(*np.nonzero(~np.isnan(values))):
            ax.text(j + 0.5, i + 0.5, format(values[i, j] if fmt != "d" else int(values[i, j]), fmt),
                    ha="center", va="center", fontsize=annot_size, color="white" if dark[i, j] else "0.15")  # fmt: skip
    return ax


def _crowded(ax, labels: list[str], rows: int, cols: int, square: bool) -> bool:
    """Whether the longest label is wider than its column (an estimate from the font size, without a draw)."""
    import matplotlib as mpl
    from matplotlib.font_manager import FontProperties

    box = ax.get_position()
    width, height = box.width * ax.figure.get_figwidth(), box.height * ax.figure.get_figheight()
    column = min(width / max(cols, 1), height / max(rows, 1)) if square else width / max(cols, 1)
    points = FontProperties(size=mpl.rcParams["xtick.labelsize"]).get_size_in_points()
    return max(map(len, labels), default=0) * 0.6 * points / 72 > 0.9 * column


def accuracy_against_cost(table: pd.DataFrame, *, x: str = "calls_per_question", ax=None):
    """Accuracy of each method against what it costs per question (``calls_per_question`` or
    ``tokens_per_question``; traces.cost_per_row output)."""
    ax = _ax(ax)
    ax.scatter(table[x], table["accuracy"], color="#3182bd")
    ax.set_xlabel(x.replace("_", " "))
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1)
    ax.set_title("Accuracy against cost")
    # one label per point (methods at the same point share it), each moved down until it overlaps no other
    points = table.groupby([x, "accuracy"], sort=False)["method"].agg(lambda m: ", ".join(map(str, m)))
    placed = []
    renderer = ax.figure.canvas.get_renderer()
    for (cost, accuracy), label in points.sort_values(ascending=True).items():
        text = ax.annotate(label, (cost, accuracy), fontsize=8, xytext=(4, 3), textcoords="offset points")
        for step in range(1, 4 * len(points) + 1):
            box = text.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in placed):
                break
            text.set_position((4, 3 - 10 * step))
        placed.append(text.get_window_extent(renderer))
    return ax


def variance_components(table: pd.DataFrame, *, ax=None):
    """Each effect's variance component (olakit.analysis.variance.variance_table) with its interval over questions,
    largest at the top, its share of the total written beside it."""
    ax = _ax(ax)
    t = table.sort_values("component").reset_index(drop=True)
    y = np.arange(len(t))
    ax.barh(y, t["component"], color="#9ecae1")
    below = np.clip(t["component"] - t["ci_low"], 0, None)
    above = np.clip(t["ci_high"] - t["component"], 0, None)
    ax.errorbar(t["component"], y, xerr=[below, above], fmt="none", ecolor="black", capsize=3)
    for i, r in t.iterrows():
        ax.annotate(f"{r['share']:.0%}" + (" (negative: 0)" if r["negative"] else ""), (r["ci_high"], i),
                    xytext=(4, -3), textcoords="offset points", fontsize=8)  # fmt: skip
    ax.set_yticks(list(y), list(t["effect"]), fontsize=8)
    ax.set_xlabel("variance component (95% interval over questions)")
    q = table.attrs.get("questions")
    ax.set_title("Where the variance lies" + (f" (n = {q} questions)" if q else ""))
    ax.set_xlim(0, float(max(t["ci_high"].max(), t["component"].max())) * 1.25 or 1)
    return ax


def accuracy_by_iteration(table: pd.DataFrame, *, ax=None):
    """Accuracy (95% CI) of the review loop's answer after each iteration, the direct answer as a dashed line
    (iterations.iteration_accuracy output)."""
    ax = _ax(ax)
    loops = table[table["iteration"].notna() & (table["method"] != "direct")].copy()  # direct: the dashed line
    loops["loop"] = loops["method"].str.replace(r"@\d+$", "", regex=True)
    for loop, g in loops.groupby("loop", sort=False):
        ax.errorbar(
            g["iteration"],
            g["accuracy"],
            yerr=error_bars(g),
            marker="o",
            capsize=3,
            label=loop,
        )
    direct = table[table["method"] == "direct"]
    if len(direct):
        ax.axhline(float(direct["accuracy"].iloc[0]), ls="--", color="grey", label="direct")
    last = int(loops["iteration"].max()) if len(loops) else 0
    ax.set_xticks(range(last + 1))  # iterations are whole numbers
    ax.set_xlim(-0.3, last + 0.3)
    ax.set_xlabel("iteration (0: the first answer)")
    ax.set_ylabel("accuracy (95% CI)")
    ax.set_ylim(-0.05, 1.05)  # a point at 0 or 1 stays in view
    ax.legend(fontsize=8)
    n = int(table["n"].max()) if len(table) else 0
    ax.set_title(f"Accuracy after each review iteration (n = {n})")
    return ax


def template_gain(gain: pd.DataFrame, *, ax=None):
    """Does a template still help at this effort (olakit.analysis.effort's ``template_gain``): the paired difference
    of each cell against the baseline within each effort, a heatmap (rows the cells, columns the efforts, in the
    table's order), each square labelled with the difference and its interval; a square whose family-Holm p is
    below alpha is marked with an asterisk."""
    ax = _ax(ax)
    efforts = list(dict.fromkeys(gain["effort"]))
    cells = list(dict.fromkeys(gain["cell"]))
    values = np.full((len(cells), len(efforts)), np.nan)
    for _, r in gain.iterrows():
        values[cells.index(r["cell"]), efforts.index(r["effort"])] = r["diff"]
    bound = max(0.05, float(np.nanmax(np.abs(values)))) if len(gain) else 1.0
    image = ax.imshow(values, cmap="RdBu", vmin=-bound, vmax=bound, aspect="auto")
    for _, r in gain.iterrows():
        mark = "*" if r["significant"] else ""
        color = "white" if abs(r["diff"]) > 0.6 * bound else "black"  # legible on the darkest squares
        ax.text(efforts.index(r["effort"]), cells.index(r["cell"]),
                f"{r['diff']:+.2f}{mark}\n[{r['diff_ci_low']:+.2f}, {r['diff_ci_high']:+.2f}]", ha="center",
                va="center", fontsize=8, color=color)  # fmt: skip
    ax.grid(False)
    ax.set_xticks(range(len(efforts)), efforts)
    ax.set_yticks(range(len(cells)), cells)
    ax.set_xlabel("reasoning effort")
    ax.set_ylabel("cell")
    baseline = gain["baseline"].iloc[0] if len(gain) else "the baseline"
    ax.set_title(f"Accuracy gain over {baseline} within each effort")
    ax.figure.colorbar(image, ax=ax, label=f"accuracy minus {baseline}'s")
    return ax


def effort_pareto(cells: pd.DataFrame, *, ax=None):
    """Accuracy against completion tokens (reasoning included) per correct answer, one point per effort and cell
    (olakit.analysis.effort's ``effort_cells``; a cell with no correct answer has no such cost and is left out, said
    in the title), the Pareto front (fewest tokens for the accuracy) joined by a line."""
    ax = _ax(ax)
    shown = cells[cells["tokens_per_correct"].notna()].astype({"tokens_per_correct": float})
    for effort, group in shown.groupby("effort", sort=False):
        ax.scatter(group["tokens_per_correct"], group["accuracy"], label=f"effort {effort}", alpha=0.8)
    # one label per point: the cells (with their efforts) that land on it
    at = shown.assign(label=shown["cell"] + " (" + shown["effort"] + ")")
    for (x, y), label in at.groupby(["tokens_per_correct", "accuracy"], sort=False)["label"].agg(", ".join).items():
        ax.annotate(label, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ordered = shown.sort_values(["tokens_per_correct", "accuracy"], ascending=[True, False])
    front = ordered[ordered["accuracy"] > ordered["accuracy"].cummax().shift(fill_value=-1.0)]
    ax.plot(front["tokens_per_correct"], front["accuracy"], color="black", lw=1, label="Pareto front")
    ax.set_xlabel("completion tokens (reasoning included) per correct answer")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1)
    left = len(cells) - len(shown)
    ax.set_title("Accuracy against tokens per correct answer" + (f" ({plural(left, 'cell')} with none correct left out)"
                                                                   if left else ""))  # fmt: skip
    ax.legend(fontsize=7)
    return ax
