"""End to end: JupyterLab on 127.0.0.1, notebooks/explore.ipynb opened in headless Chromium (Debian's, driven
by playwright), all cells run, one widget used, and what it renders checked against an independent count.
The screenshot is kept as a test artifact ($OLAKIT_TEST_ARTIFACTS, default test-artifacts/)."""

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from olakit.data.loaders import resolve_data_dir

pytestmark = pytest.mark.browser


ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # tabs side by side run their timers as the one in front does (JupyterLab polls its kernels on timers)
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def geek_records(tmp_path):
    """GEEK records with traces from a scripted loopback run (tests/test_geek.py), and their corpus."""
    from olakit.data.records import save_records
    from olakit.geek.config import GeekConfig
    from olakit.geek.run import run_geek
    from olakit.llm import LLM, Endpoint
    from olakit.llm.loopback import Loopback
    from tests.test_geek import PARAGRAPHS, scripted

    corpus = tmp_path / "albany.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in PARAGRAPHS))
    cfg = GeekConfig(n_questions=2, rows=("+De", "+RE"), corpus=str(corpus), k=1)
    with (
        Loopback(reply=scripted) as srv,
        LLM(Endpoint(srv.base_url, "x"), cache_dir=tmp_path / "c", progress=False) as llm,
    ):
        save_records(run_geek(cfg, llm=llm).records, tmp_path / "geek.parquet")
    return tmp_path / "geek.parquet", corpus


@contextlib.contextmanager
def serve(root: Path):
    """JupyterLab on 127.0.0.1 rooted in ``root``; yields its URL."""
    port = free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(root / "jupyter-config"),
        "JUPYTER_RUNTIME_DIR": str(root / "jupyter-runtime"),
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.token=",
            "--ServerApp.password=",
            f"--ServerApp.root_dir={root}",
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(root / "lab.log", "w"),
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"{url}/api/status", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail(f"JupyterLab did not start: {(root / 'lab.log').read_text()[-2000:]}")
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def with_parameters(tmp_path: Path, name: str, source: str) -> None:
    """notebooks/NAME.ipynb under tmp_path with its parameters cell replaced by ``source``."""
    nb = json.loads((ROOT / "notebooks" / name).read_text())
    nb["cells"][0]["source"] = source
    (tmp_path / "notebooks").mkdir(exist_ok=True)
    (tmp_path / "notebooks" / name).write_text(json.dumps(nb))


@pytest.fixture
def after_paper(tmp_path):
    """A checkout after `make paper`: notebooks/ and sweeps/ as the repository has them, and make paper's own
    command (`olakit sweep sweeps/paper.yaml --figures-dir figures`, every entry) run in it, on the docs' scripted
    endpoint instead of the embedded model (the explorers read what the sweep wrote; the model's speed is not what is
    tested here). Then JupyterLab rooted in the checkout. Yields (its URL, the checkout)."""
    checkout = tmp_path / "clone"
    skip = shutil.ignore_patterns(".ipynb_checkpoints", "results", "runs")
    shutil.copytree(ROOT / "notebooks", checkout / "notebooks", ignore=skip)
    shutil.copytree(ROOT / "sweeps", checkout / "sweeps")
    env = {**os.environ, "OLAKIT_BASE_URL": "scripted://tests.replies:docs", "OLAKIT_MODEL": "scripted-docs",
           "PYTHONPATH": str(ROOT), "OLAKIT_CACHE_DIR": str(tmp_path / "cache")}  # fmt: skip
    olakit = Path(sys.executable).with_name("olakit")
    done = subprocess.run([str(olakit), "sweep", "sweeps/paper.yaml", "--figures-dir", "figures"], cwd=checkout,
                          env=env, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    with serve(checkout) as url:
        yield url, checkout


def run_all(page, url: str) -> None:
    """JupyterLab opened at ``url`` (a notebook's), then Run All once its kernel is up."""
    page.goto(url, timeout=120_000)
    run_all_cells(page)


def run_all_in_app(page, path: str) -> None:
    """A notebook opened in the JupyterLab the tab already has (File > Open from Path…, as a person opens the next
    notebook, without loading JupyterLab again in a new tab), then Run All once its kernel is up."""
    page.click(".lm-MenuBar-item:has-text('File')")
    page.click(".lm-Menu-item:has-text('Open from Path…')")
    page.keyboard.type(path)
    page.keyboard.press("Enter")
    page.wait_for_selector(f".lm-TabBar-tab.lm-mod-current:has-text('{Path(path).name}')", timeout=60_000)
    run_all_cells(page)


def run_all_cells(page) -> None:
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    page.wait_for_selector("text=Python 3 (ipykernel) | Idle", timeout=120_000)  # the kernel is up
    page.click(".lm-MenuBar-item:has-text('Run')")
    page.click(".lm-Menu-item:has-text('Run All Cells')")


def close_and_shut_down(page, name: str) -> None:
    """File > Close and Shut Down Notebook…, confirmed: the notebook's tab gone and its kernel stopped."""
    page.click(".lm-MenuBar-item:has-text('File')")
    page.click(".lm-Menu-item:has-text('Close and Shut Down Notebook')")
    page.click(".jp-Dialog-button.jp-mod-accept")
    page.wait_for_selector(f".lm-TabBar-tab:has-text('{name}')", state="detached", timeout=60_000)


def scroll_to(locator, tries: int = 5) -> None:
    """Scroll a widget's output into view for a screenshot. An explorer that draws again meanwhile (a filter's
    second update) detaches the element playwright found ("Element is not attached to the DOM", seen once in a full
    run): the locator finds it again."""
    from playwright.sync_api import Error

    for left in range(tries - 1, -1, -1):
        try:
            return locator.scroll_into_view_if_needed(timeout=30_000)
        except Error as e:
            if not left or "not attached" not in str(e):
                raise


def expected_count(strategy: str = "zero-shot") -> int:
    """Questions where the regex vote is wrong but some template is right, counted from the raw prediction files
    in plain Python (tests/recorded_counts.py), without olakit."""
    from tests import recorded_counts as raw

    return sum(
        raw.vote(labels) != gold and gold in labels for labels, gold in raw.per_question(resolve_data_dir(), strategy)
    )


def test_explore_opened_in_jupyterlab_after_make_paper_with_no_path_edited(after_paper):
    """explore.ipynb as the repository has it, opened from JupyterLab's file browser after `make paper` (its kernel
    in notebooks/): Run All, every explorer finds make paper's results with no path edited (issue 53, item 2): the
    question explorer over the recorded outputs (254 questions; a filter's count checked against the raw files), the
    Fig-12 heatmaps, GEEK's traces of the sweep's geek_ablation run step by step, and the review loop's history of
    its review_loop run. Screenshots of each are kept as artifacts ($OLAKIT_TEST_ARTIFACTS)."""
    import pandas as pd
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} missing: `make test` installs Debian's chromium (make browser)")
    url, checkout = after_paper
    want = expected_count()
    geek = pd.read_parquet(checkout / "results/paper/geek_ablation/records.parquet")
    review = pd.read_parquet(checkout / "results/paper/review_loop/records.parquet")
    artifacts = Path(os.environ.get("OLAKIT_TEST_ARTIFACTS", ROOT / "test-artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        run_all(page, f"{url}/lab/tree/notebooks/explore.ipynb")  # opened as the README says
        filt = page.locator(".widget-dropdown", has=page.locator("label", has_text="filter")).locator("select").first
        filt.wait_for(timeout=180_000)
        page.wait_for_selector("text=254 questions", timeout=60_000)  # every question of the first strategy
        filt.select_option(label="vote wrong but some template right")
        page.wait_for_function(
            "n => [...document.querySelectorAll('.widget-html-content')]"
            ".some(e => e.textContent.trim() === n + ' questions')",
            arg=str(want),
            timeout=60_000,
        )
        summary = page.locator(".olakit-summary").first.text_content()
        assert "templates say" in summary or "no template" in summary
        scroll_to(page.locator(".olakit-answers").first)
        page.screenshot(path=str(artifacts / "explore_after_paper_questions.png"))
        assert page.locator(".olakit-heatmap").count() >= 1  # the Fig-12 heatmap explorer rendered too
        page.wait_for_selector(".olakit-steps", timeout=120_000)  # GEEK's traces, from make paper's geek_ablation
        steps = page.locator(".olakit-steps").first
        scroll_to(steps)
        page.screenshot(path=str(artifacts / "explore_after_paper_geek.png"))
        dev = json.loads((resolve_data_dir() / "strategyqa" / "dev.json").read_text())  # StrategyQA's own file
        asked = {d["qid"]: d["question"] for d in dev}[geek["question_id"].iloc[0]]
        assert asked in page.locator(".olakit-question").all_text_contents()
        assert steps.text_content().startswith("select → ")
        page.wait_for_selector(".olakit-iterations", timeout=120_000)  # the review loop's, from its review_loop run
        scroll_to(page.locator(".olakit-iterations").first)
        page.screenshot(path=str(artifacts / "explore_after_paper_review.png"))
        text = page.locator(".jp-Notebook").text_content()
        assert "no GEEK records" not in text and "no review-loop records" not in text
        # one cell run again, as a person does after a look: the explorers' cell, Shift+Enter in the same kernel
        path = checkout / "notebooks" / "explore.ipynb"
        ran = saved_after_run(page, path)
        assert ran == "", ran
        counts = [c.get("execution_count") for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        page.locator(".jp-Notebook .jp-CodeCell").nth(1).locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        page.wait_for_function(
            "n => [...document.querySelectorAll('.jp-InputPrompt')].some(e => e.textContent.includes('[' + n + ']'))",
            arg=str(max(counts) + 1),
            timeout=120_000,
        )
        again = saved_after_run(page, path)
        cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        assert again == "" and cells[1]["execution_count"] == max(counts) + 1, again
        page.wait_for_selector("text=254 questions", timeout=60_000)  # the explorer drawn again
        loop = review[(review["loop"] != "direct") & (review["question_id"] == review["question_id"].iloc[0])]
        answers = "".join(f"{i}: {x or 'unparsed'}" for i, x in zip(loop["iteration"], loop["extracted"]))
        assert page.locator(".olakit-iterations").first.text_content() == answers, answers
        browser.close()
    assert (checkout / "notebooks/results/explore/records.parquet").is_file()  # the import's home, as documented


def test_compare_runs_in_jupyterlab_one_question_across_the_pot_runs(tmp_path):
    """The PoT import spec in compare_runs.ipynb, as docs/imports.md says: the question explorer over the 253
    questions every run answered, one question across the four runs, and a McNemar pair's discordant questions
    opened in it; the counts checked against the raw files here."""
    from playwright.sync_api import sync_playwright

    from olakit.data.imported import load_import_spec

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} missing: `make test` installs Debian's chromium (make browser)")
    spec = ROOT / "imports" / "pot_aqua.yaml"
    # PoT right and GPT-4 CoT wrong, by hand from the two files (the official gold by question text)
    official = {json.loads(x)["question"]: json.loads(x)["correct"]
                for x in (resolve_data_dir() / "aqua" / "test.json").open()}  # fmt: skip
    files = {r.run: r.file for r in load_import_spec(spec).runs}
    pot = {r["question"]: r["prediction"] == official[r["question"]]
           for r in map(json.loads, open(files["PoT"])) if "question" in r}  # fmt: skip
    gpt4 = {}
    for r in map(json.loads, open(files["GPT-4 CoT"])):
        found = {c for c in "ABCDE" if f"{c})" in r["generated_prediction"]}
        gpt4[r["question"]] = len(found) == 1 and found.pop() == official[r["question"]]
    want = sum(pot[q] and not gpt4[q] for q in pot)
    with_parameters(tmp_path, "compare_runs.ipynb",
                    f"sources = [{str(spec)!r}]\nlabels = None\nvote_over = None\ndata_dir = None\n"
                    f"out_dir = {str(tmp_path / 'results' / 'compare')!r}\n")  # fmt: skip
    artifacts = Path(os.environ.get("OLAKIT_TEST_ARTIFACTS", ROOT / "test-artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    with serve(tmp_path) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        run_all(page, f"{url}/lab/tree/notebooks/compare_runs.ipynb")
        page.wait_for_selector("text=253 questions", timeout=180_000)
        header = page.locator(".olakit-header").first.text_content()
        assert "code-davinci-002" in header and "gpt-4" in header and "n = 253 questions" in header
        answers = page.locator(".olakit-answers").first.text_content()
        assert all(run in answers for run in ("PoT-SC", "PoT zero-shot", "GPT-4 CoT"))
        pair = page.locator(".widget-dropdown", has=page.locator("label", has_text="pair")).locator("select").first
        pair.wait_for(timeout=120_000)  # the pair explorer renders after the question explorer
        page.wait_for_function("s => s.options.length > 0", arg=pair.element_handle(), timeout=60_000)
        texts = [o.replace("\xa0", " ") for o in pair.locator("option").all_text_contents()]  # ipywidgets' spaces
        pair.select_option(index=next(i for i, o in enumerate(texts) if o.strip().startswith("PoT vs GPT-4 CoT")))
        page.locator("button:has-text('Open in question explorer')").first.click()
        page.wait_for_function(
            "n => [...document.querySelectorAll('.widget-html-content')]"
            ".some(e => e.textContent.trim() === n + ' questions')",
            arg=str(want),
            timeout=60_000,
        )
        scroll_to(page.locator(".olakit-answers").first)
        page.screenshot(path=str(artifacts / "compare_runs_jupyterlab.png"), full_page=False)
        browser.close()


def test_every_notebook_runs_all_in_jupyterlab(tmp_path, monkeypatch):
    """Run All on each of olakit's notebooks, as a person opens them: JupyterLab rooted in a folder holding
    notebooks/ as a checkout does, the kernel in the notebook's own folder (relative paths are its), the default
    backend, the model a scripted endpoint. Each notebook, saved after its run, has every code cell executed and no
    error output; then Run All again in the same kernel does the same (it once took the notebook's own variables
    for parameters: "unknown parameters ['params', 'tables']"). A few tabs side by side, each loading JupyterLab
    once: a notebook run is closed and shut down, and the tab's next one opened by File > Open from Path…, as a
    person works through them (a tab loaded anew for each notebook was 1.8 CPU s more a notebook, of Chromium's and
    the server's, by hand on three of them)."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} missing: `make test` installs Debian's chromium (make browser)")
    (tmp_path / "notebooks").mkdir()
    names = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    for name in names:
        shutil.copy(ROOT / "notebooks" / name, tmp_path / "notebooks" / name)
    monkeypatch.setenv("OLAKIT_BASE_URL", "scripted://tests.replies:docs")
    monkeypatch.setenv("OLAKIT_MODEL", "scripted-docs")
    monkeypatch.delenv("MPLBACKEND", raising=False)
    failed = {}
    artifacts = Path(os.environ.get("OLAKIT_TEST_ARTIFACTS", ROOT / "test-artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    with serve(tmp_path) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        tabs = [browser.new_page(viewport={"width": 1400, "height": 1000}) for _ in range(AT_ONCE)]
        load = set(range(AT_ONCE))  # tabs where JupyterLab is loaded (again, after a failure) with the next notebook
        for start in range(0, len(names), AT_ONCE):  # a few tabs at once, as a person runs notebooks side by side
            batch = dict(zip(names[start : start + AT_ONCE], tabs))
            for i, (name, page) in enumerate(batch.items()):
                try:
                    if i in load:
                        run_all(page, f"{url}/lab/workspaces/run-all-{i}/tree/notebooks/{name}?reset")
                    else:
                        run_all_in_app(page, f"notebooks/{name}")
                except Exception as e:  # noqa: BLE001 - one notebook's failure is reported with the others'
                    failed[name] = f"{type(e).__name__}: {str(e)[:300]}"
            for name, page in batch.items():
                try:
                    failed[name] = failed.get(name) or saved_after_run(page, tmp_path / "notebooks" / name)
                except Exception as e:  # noqa: BLE001
                    failed[name] = f"{type(e).__name__}: {str(e)[:300]}"
            for i, (name, page) in enumerate(batch.items()):  # Run All again in the same kernel, after a look
                load.add(i)
                if failed[name]:
                    continue
                path = tmp_path / "notebooks" / name
                first = max(c["execution_count"] for c in json.loads(path.read_text())["cells"]
                            if c["cell_type"] == "code")  # fmt: skip
                try:
                    page.click(".lm-MenuBar-item:has-text('Run')")
                    page.click(".lm-Menu-item:has-text('Run All Cells')")
                    failed[name] = saved_after_run(page, path, after=first)
                    failed[name] = failed[name] and f"the second Run All: {failed[name]}"
                except Exception as e:  # noqa: BLE001
                    failed[name] = f"the second Run All: {type(e).__name__}: {str(e)[:300]}"
                if failed[name]:
                    page.screenshot(path=str(artifacts / f"run_all_{Path(name).stem}.png"))
                    continue
                try:
                    close_and_shut_down(page, name)  # the tab's JupyterLab opens its next notebook
                    load.discard(i)
                except Exception as e:  # noqa: BLE001
                    failed[name] = f"Close and Shut Down: {type(e).__name__}: {str(e)[:300]}"
        browser.close()
    assert {k: v for k, v in failed.items() if v} == {}


AT_ONCE = 3
"""Notebooks run at once in the Run All test, each in its own tab and kernel."""


def saved_after_run(page, path: Path, timeout: float = 600, after: int = 0) -> str:
    """Save the notebook (Ctrl+S) until every code cell has run (with an execution count above ``after``: a second
    Run All) or one shows an error (Run All stops there), the kernel idle; '' when every cell ran without error,
    else what went wrong."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        page.wait_for_timeout(700)
        page.keyboard.press("Control+s")
        page.wait_for_timeout(300)
        try:
            code = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        except json.JSONDecodeError:
            continue  # caught mid-save
        errors = [o.get("ename", "") + ": " + o.get("evalue", "")[:300] for c in code for o in c.get("outputs", [])
                  if o.get("output_type") == "error"]  # fmt: skip
        if errors:
            return "; ".join(errors)
        idle = page.locator("text=Python 3 (ipykernel) | Idle").count() > 0
        if idle and all((c.get("execution_count") or 0) > after for c in code):
            return ""
    return "Run All did not finish in time"
