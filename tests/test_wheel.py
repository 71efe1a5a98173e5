"""A plain `pip install` of the wheel, into a fresh virtual environment with none of the extras, reproduces
Table 3 from the recorded outputs: the package data travels inside the wheel, and analysing recorded runs needs
neither torch nor the embedded model."""

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.test_cli import STRATEGY_FILES, count_correct

pytestmark = pytest.mark.slow


def test_wheel_in_a_fresh_venv_reproduces_table3(tmp_path, data_dir):
    root = Path(__file__).resolve().parent.parent
    run = lambda *cmd, **kw: subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)  # noqa: E731
    # built from a copy of the committed files, as from a clean clone (setuptools writes build/ into its source)
    source = tmp_path / "source"
    for name in run("git", "-C", str(root), "ls-files").stdout.splitlines():
        if (root / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, source / name)
    built = run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(source))
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("olakit-*.whl"))
    venv = tmp_path / "venv"
    assert run(sys.executable, "-m", "venv", str(venv)).returncode == 0
    installed = run(str(venv / "bin" / "pip"), "install", "-q", str(wheel))
    assert installed.returncode == 0, installed.stderr[-2000:]
    assert run(str(venv / "bin" / "python"), "-c", "import torch").returncode != 0  # no extra came along
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
