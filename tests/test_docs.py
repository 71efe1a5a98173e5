"""The doors as users walk through them: every notebook run the ways people run notebooks (`olakit notebook NAME`
with no parameters, papermill's own command line; Run All in JupyterLab is tests/test_e2e_jupyterlab.py), each from
a fresh folder outside the repository, with a user's environment and the default matplotlib backend, the model a
scripted endpoint; and the few command blocks of the docs that are not run here, each with its reason."""

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.docs_blocks import DIRECTIVE, REPO, environment, share_embeddings

NOTEBOOKS = sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb"))
NOT_RUN = {
    ("README.md", "make paper"),
    ("README.md", "olakit sweep geek_dev"),
    ("batch.md", "vllm run-batch"),
    ("imports.md", "jupyter lab notebooks/compare_runs.ipynb"),
    ("sweeps.md", "dask worker"),
}
"""The command blocks not run here (docs_blocks: ``not-run``), by a phrase of each: the suite itself and its main job,
a sweep for a real endpoint, vLLM (CUDA only), a server for a browser, a recipe for several machines."""


def blocks():
    """(file name, language, directive text, source) of every fenced block of README.md and docs/."""
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = path.read_text()
        for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
            before = text[: m.start()]
            last = list(re.finditer(r"^```", before, re.M))
            gap = before[last[-1].end() :] if len(last) % 2 == 0 and last else before
            said = DIRECTIVE.findall(gap)
            yield path.name, m.group(1), said[-1] if said else "", m.group(2)


def test_the_blocks_not_run_are_few_and_each_says_why():
    skipped = {(name, source) for name, lang, said, source in blocks() if said.startswith("not-run")}
    found = {(name, phrase) for name, phrase in NOT_RUN for n, source in skipped if n == name and phrase in source}
    assert found == NOT_RUN and len(skipped) == len(NOT_RUN), skipped
    reasons = [said for _, _, said, _ in blocks() if said.startswith("not-run")]
    assert all(re.match(r'not-run "[^"]{20,}"', r) for r in reasons), reasons


def test_the_files_the_workers_start_first_are_files_of_the_suite(pytestconfig):
    """conftest.py's LONGEST, the files pytest-xdist's workers start first, names files the suite collects, each once:
    a file renamed or gone would silently leave its place to none, and its tests to the end of the run."""
    root = str(REPO / "conftest.py")  # the repository's conftest, as pytest loaded it (tests/ has one too)
    (LONGEST,) = [p.LONGEST for p in pytestconfig.pluginmanager.get_plugins() if getattr(p, "__file__", "") == root]
    collected = {str(p.relative_to(REPO)) for p in [*(REPO / "tests").glob("test_*.py"), *(REPO / "docs").glob("*.md")]}
    assert len(set(LONGEST)) == len(LONGEST) and set(LONGEST) <= collected | {"README.md"}, LONGEST


def test_commands_are_in_blocks_the_suite_runs():
    """A command in a ``sh``, ``shell`` or ``console`` block would escape the suite: commands are ``bash`` blocks, and
    what is not a command (a synopsis, output) is ``text``."""
    languages = {lang for _, lang, _, _ in blocks()}
    assert languages <= {"bash", "python", "text", "yaml", ""}, languages
    for name, lang, _, source in blocks():
        if lang in ("", "text"):
            assert not re.search(r"^\s*olakit \w+ [^\[]*$", source, re.M) or "[" in source or "\n  " in source, (
                name, source[:200])  # fmt: skip


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """A fresh folder outside the repository with a HOME of its own, and a user's environment there; its sentence
    embeddings the run's, as the docs pages' are (tests/docs_blocks.py says why: note_strategy's notebook embeds
    AQuA's questions and notes, which other tests of the run embed too)."""
    folder = Path(tempfile.mkdtemp(prefix="olakit-user-"))
    share_embeddings(folder / "home", tmp_path_factory)
    return folder, environment(folder / "home")


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_every_notebook_runs_by_olakit_notebook_with_no_parameters(notebook, user, tmp_path):
    """`olakit notebook NAME` once died after executing (KeyError: 'out_dir' when none was given), wrote into the
    installed package's repository, and compare_runs failed under the default backend (FigureCanvasBase has no
    get_renderer): from a fresh folder, with no parameter, each runs and writes its result there."""
    folder, env = user
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(["olakit", "notebook", notebook], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert f"executed: runs/{notebook}.ipynb" in done.stdout and (work / "runs" / f"{notebook}.ipynb").is_file()
    if notebook == "explore":  # it reads (and, missing, imports the recorded outputs into) results/explore
        assert (work / "results" / "explore" / "records.parquet").is_file()
        return
    out = json.loads((work / f"results/{notebook}/run.json").read_text())  # there, not in the repository
    assert out["door"] == f"notebook:{notebook}" and out["inputs"]
    if not out["roles"] and not any(p["roles"] for p in out["parts"].values()):  # made of recorded outputs only
        again = subprocess.run(["olakit", "notebook", notebook], cwd=work, env=env, capture_output=True, text=True,
                               timeout=600)  # fmt: skip
        assert "unchanged: kept" in again.stdout, again.stdout + again.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("notebook", ["template_count", "compare_runs", "geek_ablation", "explore"])
def test_notebooks_run_by_papermills_own_command_line(notebook, user, tmp_path):
    """papermill's command line, as its users type it, on olakit's notebook, from a fresh folder with the default
    backend: no olakit in between to set anything."""
    folder, env = user
    work = tmp_path / "work"
    work.mkdir()
    papermill = Path(sys.executable).parent / "papermill"
    out = [] if notebook == "explore" else ["-p", "out_dir", "here"]  # explore writes no result of its own
    done = subprocess.run([str(papermill), str(REPO / "notebooks" / f"{notebook}.ipynb"), "out.ipynb", *out],
                          cwd=work, env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    if notebook != "explore":
        assert json.loads((work / "here" / "run.json").read_text())["door"] == f"notebook:{notebook}"
