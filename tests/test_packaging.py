"""pyproject.toml and environment.yml name the same packages with the same lower bounds."""

import json
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _norm(spec: str) -> str:
    name, rest = re.match(r"\s*([A-Za-z0-9_.\-]+)\s*(.*)", spec).groups()
    return re.sub(r"[-_.]+", "-", name).lower() + rest.replace(" ", "")


def test_environment_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pip_side = {_norm(s) for s in project["dependencies"]}
    for name, extra in project.get("optional-dependencies", {}).items():
        if name != "model-1_5b":  # the opt-in 1.5B model's parts (make model-1.5b), not part of the environment
            pip_side |= {_norm(s) for s in extra}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda_side = {_norm(s) for s in env["dependencies"] if isinstance(s, str)}
    conda_side -= {s for s in conda_side if s.startswith(("python", "pip"))}
    for s in env["dependencies"]:
        if isinstance(s, dict):
            conda_side |= {_norm(p) for p in s["pip"] if not p.startswith("-e")}
    assert conda_side == pip_side


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make paper" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_benchmark_files_cited_in_the_docs_exist_and_say_what_the_docs_say():
    """Every benchmark file the README or docs/ cite exists; a line citing it says "missed" exactly when the file
    records a missed goal."""
    readme = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    lines = {}
    for line in readme.splitlines():
        for name in re.findall(r"results/benchmarks/([a-z0-9_.]+?)\.json", line):
            lines.setdefault(name, []).append(line)
    assert {"throughput", "cache_replay", "embedded_overhead", "widgets"} <= set(lines)
    for name, cited in sorted(lines.items()):
        record = json.loads((ROOT / "results" / "benchmarks" / f"{name}.json").read_text())
        if "goal" not in record:  # a measurement without a goal (e.g. models.json): it exists, nothing to meet
            continue
        goal, figure = record["goal"], record["figure"]
        met = figure >= goal if record["goal_is"] == "at least" else figure <= goal
        assert record["benchmark"] == name and record["met"] is met, name
        assert all(("missed" in line.lower()) is (not met) for line in cited), name


def test_readme_is_short_and_links_every_document():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    docs = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert docs and all(f"(docs/{name})" in readme for name in docs), docs
    for name in docs:  # every relative link of a document points at a file that exists
        text = (ROOT / "docs" / name).read_text()
        for target in re.findall(r"\]\(([^)#:]+\.md)\)", text):
            assert (ROOT / "docs" / target).is_file(), (name, target)


def test_the_readmes_figure_is_the_one_the_template_count_notebook_draws(tmp_path):
    """The README shows Fig 6 (docs/figures/): drawn again here as the notebook draws it from the recorded outputs,
    pixel for pixel, so the picture in the README is never a stale one."""
    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt
    from matplotlib.image import imread

    from olakit.analysis import figures, tables
    from olakit.data.provenance import save_figure
    from olakit.notebook.records import get_records
    from olakit.olagpt.config import OlaGPTConfig

    shown = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", (ROOT / "README.md").read_text())
    assert shown == ["docs/figures/fig6_template_count.png"]
    cfg = OlaGPTConfig(n_questions=None)  # as the notebook's parameters cell has it
    result = get_records("recorded", cfg)
    table = tables.template_count_ablation(result.records, result.templates, cfg.analysis())
    with figures.paper_style():
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        figures.template_count(table, ax=ax)
    save_figure(fig, tmp_path, "fig6")
    plt.close(fig)
    assert (imread(tmp_path / "fig6.png") == imread(ROOT / shown[0])).all()
