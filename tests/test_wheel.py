"""A plain `pip install` of the wheel, into a fresh virtual environment with none of the extras (the base
dependencies only), as a user who installs olakit from an index has it:
- reproduces Table 3 from the recorded outputs (the package data travels inside the wheel; analysing recorded runs
  needs neither torch nor the embedded model);
- runs every door: each command that needs no extra runs to its end against an OpenAI-compatible server (the
  loopback server, answering as tests/replies.py's `docs` model does), olakit's own notebooks, sweeps and import
  specs found by name; each that needs an extra stops before any call with one line naming the install command."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from olakit.llm.loopback import Loopback
from tests import replies
from tests.test_cli import STRATEGY_FILES, count_correct

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def run(*cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A venv holding the wheel built from a copy of the committed files (as from a clean clone: setuptools writes
    build/ into its source), with the base dependencies only. pip installs them without byte-compiling every module
    of the 90-odd packages (``--no-compile``: 19 s against 41 s of CPU here, 2026-12-06), pip's work, not olakit's:
    what the doors import is compiled as it is imported (their environment, a user's, has no
    PYTHONDONTWRITEBYTECODE: the first door writes the bytecode the later ones read), and the doors' test used about
    the same CPU either way (27.8 s, 28.3 s). The pip is the suite's own, a current one (``pip --python`` the fresh
    venv), as a user who upgrades pip first has it, not the pip 23 that ``venv`` bundles: its resolver took 15.8 s
    of CPU for the install against 6.9 s, and ensurepip 2.5 s more (2026-12-07)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    for name in run("git", "-C", str(ROOT), "ls-files").stdout.splitlines():
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    built = run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"), str(source))
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next((tmp / "dist").glob("olakit-*.whl"))
    venv = tmp / "venv"
    assert run(sys.executable, "-m", "venv", "--without-pip", str(venv)).returncode == 0
    python = venv / "bin" / "python"
    installed = run(sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile", str(wheel))
    assert installed.returncode == 0, installed.stderr[-2000:]
    for module in ("torch", "faiss", "xllamacpp", "sklearn", "bm25s", "jupyterlab", "every_eval_ever"):
        assert run(str(python), "-c", f"import {module}").returncode != 0, module  # no extra came
    return venv


def test_wheel_in_a_fresh_venv_reproduces_table3(venv, tmp_path, data_dir):
    out = tmp_path / "out"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OLAKIT_DATA_DIR": str(data_dir)}
    r = run(
        str(venv / "bin" / "olakit"), "reproduce-olagpt", "--out", str(out), "--n-boot", "50", cwd=tmp_path, env=env
    )
    assert r.returncode == 0, r.stderr[-2000:]
    acc = pd.read_csv(out / "tables" / "accuracy.csv", index_col=0)
    for folder, template in (("st", "ST"), ("dt", "DT"), ("pt", "PT"), ("dst", "DST"), ("turbo", "turbo")):
        for strategy, suffix in STRATEGY_FILES.items():
            assert acc.loc[template, strategy] == pytest.approx(count_correct(data_dir, folder, suffix) / 254)
    assert acc.loc["regex_vote", "retrieval"] > 0  # the vote table came out too (its numbers: test_paper_numbers)


LIVE = "pip install 'olakit[live]'"

OFFLINE = "batch export --requests req.jsonl run -n 2 --offset 5 --templates ST --strategies zero-shot --out b1"
DOORS = [
    # (command, exit status, what its output must hold); a door that needs an extra names the pip command
    ("run --templates ST,DT --strategies zero-shot -n 2 --out r1", 0, "run log: r1/run.json"),
    ("run --templates ST,DT --strategies zero-shot -n 2 --seed 1 --out r2", 0, "run log: r2/run.json"),
    ("run --templates ST --strategies retrieval -n 2 --out r3", 2, LIVE),
    ("run --templates ST --strategies zero-shot --baselines auto_cot -n 2 --out r4", 2, LIVE),
    ("geek --rows +De -n 2 --out g1", 0, "calls: "),
    ("geek -n 2 --out g2", 2, LIVE),
    ("review -n 2 --out v1", 0, "calls: "),
    ("notebook template_count", 0, "executed: runs/template_count.ipynb"),
    ("compare --sources r1,r2 --out c1", 0, "wrote c1/records.parquet"),
    ("plan --comparisons 'ST:zero-shot vs DT:zero-shot' --estimates r1", 0, "plan: 1 comparison"),
    ("import pot_aqua --out i1", 0, "wrote i1/records.parquet"),
    ("export r1 --out r1.jsonl", 2, "pip install --no-deps --ignore-requires-python every-eval-ever"),
    ("notes build --pool 3 --out n1", 0, "n1/notes.jsonl"),
    (
        "batch export --requests req.jsonl run -n 2 --offset 5 --templates ST --strategies zero-shot --out b1",
        3,
        "req.jsonl",
    ),
    ("batch run req.jsonl --out out.jsonl", 0, ""),
    ("batch ingest out.jsonl", 0, ""),
    ("again r1", 0, "olakit run --out r1-again"),
    ("data verify", 0, ""),
    ("serve", 2, LIVE),
]


def test_every_door_of_a_base_install(venv, tmp_path, data_dir):
    """Each command in a user's folder, with the user's environment (no MPLBACKEND, a fresh HOME, the venv's
    olakit first on PATH): its exit status and its own words; the doors that need an extra pay for nothing."""
    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "OLAKIT_DATA_DIR": str(data_dir),
        "OLAKIT_MODEL": "docs-model",
    }
    work = tmp_path / "work"
    work.mkdir()
    failed = []
    with Loopback(reply=replies.docs) as server:
        env["OLAKIT_BASE_URL"] = server.base_url
        for command, status, words in DOORS:
            before = server.requests
            r = subprocess.run(f"olakit {command}", shell=True, cwd=work, env=env, capture_output=True, text=True,
                               timeout=600)  # fmt: skip
            said = r.stdout + r.stderr
            if r.returncode != status or words not in said or (status == 2 and "Traceback" in said):
                failed.append(f"olakit {command}: exit {r.returncode} (want {status}), {said[-1500:]}")
            if status == 2 and server.requests != before:
                failed.append(f"olakit {command}: refused after {server.requests - before} paid call(s)")
        again = subprocess.run(f"olakit {OFFLINE}", shell=True, cwd=work, env=env, capture_output=True, text=True)
    assert failed == [], "\n\n".join(failed)
    # the offline loop: the next stage's requests, then the run completes from the cache
    assert again.returncode in (0, 3), again.stderr[-2000:]
    records = pd.read_parquet(work / "r1" / "records.parquet")
    assert len(records) == 2 * 2  # 2 questions x 2 templates (the vote is a table, not a record)
    assert set(records["template"]) == {"ST", "DT"}
    log = json.loads((work / "results" / "template_count" / "run.json").read_text())
    assert log["kind"] and (work / "results" / "template_count" / "tables").is_dir()  # in the command's folder
    assert not (venv / "share" / "olakit" / "results").exists()  # nothing written beside the installed notebooks
