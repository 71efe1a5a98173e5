"""The README's numbers on the OlaGPT recorded outputs are pinned: Table 3 (templates and the regex vote), Table 4,
Table 8 and paper_comparison.csv, each cell checked against a count computed in this test from the raw files
(tests/recorded_counts.py, plain Python, independent of olakit) and against the README's own tables."""

import re
from pathlib import Path

import pytest

from olakit.analysis.reproduce import paper_comparison
from olakit.analysis.tables import compute_tables
from tests import recorded_counts as raw

README = Path(__file__).resolve().parent.parent / "README.md"
STRATEGIES = list(raw.SUFFIX)


def readme_table(title: str) -> dict[str, list[float]]:
    """Row name -> the first number of each cell, from the README table whose header starts with ``| title``."""
    lines = README.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {title}"))
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = [float(re.search(r"-?\d+(?:\.\d+)?", c.replace("*", "")).group()) for c in cells[1:]]
    return rows


@pytest.fixture(scope="module")
def tables(olagpt_records):
    return compute_tables(olagpt_records, n_boot=10)


def test_table3_templates_and_vote(tables, data_dir):
    acc = tables["accuracy"]
    readme = readme_table("Table 3")
    for template in raw.FOLDERS:
        want = [raw.correct(data_dir, template, s) / raw.N for s in STRATEGIES]
        assert acc.loc[template, STRATEGIES].tolist() == pytest.approx(want, abs=1e-12), template
        assert readme[template] == pytest.approx([round(w, 4) for w in want], abs=1e-9), template
    want = [raw.vote_correct(data_dir, s) / raw.N for s in STRATEGIES]
    assert acc.loc["regex_vote", STRATEGIES].tolist() == pytest.approx(want, abs=1e-12)
    assert readme["regex vote"] == pytest.approx([round(w, 4) for w in want], abs=1e-9)


def test_table4_consistency(tables, data_dir):
    t4 = tables["consistency"]
    readme = readme_table("Table 4")
    for s in STRATEGIES:
        want = raw.consistency(data_dir, s)
        assert t4[s].to_dict() == {c: want.get(c, 0) for c in range(6)}, s
    for c in (2, 3, 4, 5):
        assert readme[f"c = {c}"] == [raw.consistency(data_dir, s)[c] for s in STRATEGIES]


def test_table8_bounds(tables, data_dir):
    b = tables["bounds"].pivot(index="method", columns="notes_strategy", values="correct")
    readme = readme_table("Table 8")
    upper = [raw.bounds(data_dir, s)[0] for s in STRATEGIES]
    lower = [raw.bounds(data_dir, s)[1] for s in STRATEGIES]
    assert b.loc["regex_upper", STRATEGIES].tolist() == upper
    assert b.loc["regex_lower", STRATEGIES].tolist() == lower
    assert readme["regex_upper"] == pytest.approx([round(u / raw.N, 4) for u in upper], abs=1e-9)
    assert readme["regex_lower"] == pytest.approx([round(x / raw.N, 4) for x in lower], abs=1e-9)


def test_paper_comparison_cells(tables, data_dir):
    cmp = paper_comparison(tables).set_index(["table", "row", "column"])
    for template in raw.FOLDERS:
        for s in STRATEGIES:
            if (t := ("table3", template, s)) in cmp.index:
                assert cmp.loc[t, "recomputed"] == pytest.approx(raw.correct(data_dir, template, s) / raw.N)
                assert cmp.loc[t, "diff"] == pytest.approx(cmp.loc[t, "recomputed"] - cmp.loc[t, "paper"])
    for s in STRATEGIES:
        assert cmp.loc[("table3", "regex_vote", s), "recomputed"] == pytest.approx(
            raw.vote_correct(data_dir, s) / raw.N
        )
        assert cmp.loc[("table4", "3", s), "recomputed"] == raw.consistency(data_dir, s)[3]
        assert cmp.loc[("table8", "regex_upper", s), "recomputed"] == pytest.approx(raw.bounds(data_dir, s)[0] / raw.N)
    # the paper's printed numbers come from data/paper_tables.json, e.g. Table 3 turbo zero-shot 0.3228
    assert cmp.loc[("table3", "turbo", "zero-shot"), "paper"] == pytest.approx(0.3228)
    assert cmp["recomputed"].notna().sum() > 50
