"""``olakit sweep FILE.yaml``: run notebooks over parameter grids through papermill, several at once, sharing
one cache, with the executed notebooks under runs/<run_id>/ and an index of what ran.

    run_id: paper          # optional; default: the file name and a UTC timestamp
    parallel: 2            # notebooks at once
    notebooks:
      - notebook: notebooks/template_count.ipynb
        parameters: {source: recorded}
        grid: {tie_rule: [first, random]}     # one run per combination

Each run writes its outputs to results/<run_id>/<name> (its ``out_dir`` parameter) and its executed notebook to
runs/<run_id>/<name>.ipynb; runs/<run_id>/index.json lists every run with its parameters, status, wall time and
the calls its manifest reports. Live notebooks share the cache ($OLAKIT_CACHE_DIR) and, when no endpoint is
configured, one embedded model that the sweep starts ($OLAKIT_EMBEDDED_URL), so a rerun is served from the cache.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import logging
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from olakit.data.files import REPO_ROOT, write_atomic
from olakit.errors import DataError

log = logging.getLogger("olakit")


@dataclass
class Job:
    name: str
    notebook: str
    parameters: dict
    output: str
    status: str = "pending"
    error: str = ""
    wall_s: float = 0.0
    calls: dict = field(default_factory=dict)


def load_spec(path: str | os.PathLike) -> dict:
    """Read and check a sweep file; DataError says what is wrong and where."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: sweep file not found")
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DataError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("notebooks"), list) or not spec["notebooks"]:
        raise DataError(f"{path}: needs a non-empty list 'notebooks'")
    unknown = sorted(set(spec) - {"run_id", "parallel", "notebooks"})
    if unknown:
        raise DataError(f"{path}: unknown keys {unknown}; known: notebooks, parallel, run_id")
    for i, entry in enumerate(spec["notebooks"]):
        where = f"{path}: notebooks[{i}]"
        if not isinstance(entry, dict) or "notebook" not in entry:
            raise DataError(f"{where}: needs 'notebook' (a path)")
        bad = sorted(set(entry) - {"notebook", "name", "parameters", "grid"})
        if bad:
            raise DataError(f"{where}: unknown keys {bad}; known: notebook, name, parameters, grid")
        nb = Path(entry["notebook"])
        if not (nb if nb.is_absolute() else REPO_ROOT / nb).is_file():
            raise DataError(f"{where}: notebook {entry['notebook']} not found")
        grid = entry.get("grid") or {}
        if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
            raise DataError(f"{where}: 'grid' must map parameter names to non-empty lists")
        if "out_dir" in (entry.get("parameters") or {}) or "out_dir" in grid:
            raise DataError(f"{where}: out_dir is set by the sweep (results/<run_id>/<name>)")
    return spec


def _slug(value) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")[:40] or "x"


def expand(spec: dict, run_id: str, runs_dir: Path, results_dir: Path) -> list[Job]:
    """One Job per notebook and grid point, with its out_dir and executed-notebook path."""
    jobs, seen = [], set()
    for entry in spec["notebooks"]:
        base = entry.get("name") or Path(entry["notebook"]).stem
        grid = entry.get("grid") or {}
        keys = list(grid)
        for values in itertools.product(*(grid[k] for k in keys)) if keys else [()]:
            point = dict(zip(keys, values))
            name = base + "".join(f"__{k}-{_slug(v)}" for k, v in point.items())
            if name in seen:
                raise DataError(f"two sweep runs are both named {name!r}; give the entries distinct 'name's")
            seen.add(name)
            params = {**(entry.get("parameters") or {}), **point, "out_dir": str(results_dir / run_id / name)}
            jobs.append(Job(name, str(entry["notebook"]), params, str(runs_dir / run_id / f"{name}.ipynb")))
    return jobs


def _execute(job: Job) -> Job:
    import papermill as pm

    t0 = time.perf_counter()
    try:
        nb = Path(job.notebook)
        pm.execute_notebook(
            str(nb if nb.is_absolute() else REPO_ROOT / nb),
            job.output,
            parameters=job.parameters,
            kernel_name="python3",
            progress_bar=False,
            cwd=str(REPO_ROOT),
            extra_arguments=["--IPKernelApp.log_level=ERROR"],  # no "running over TCP without encryption" per kernel
        )
        job.status = "ok"
    except Exception as exc:  # one failed notebook does not stop the others; the index says why
        job.status, job.error = "failed", f"{type(exc).__name__}: {str(exc)[-1500:]}"
    job.wall_s = round(time.perf_counter() - t0, 2)
    man = Path(job.parameters["out_dir"]) / "manifest.json"
    if job.status == "ok" and man.is_file():
        job.calls = json.loads(man.read_text()).get("calls", {})
    log.info("sweep: %s %s in %.1f s", job.name, job.status, job.wall_s)
    return job


def _needs_embedded(jobs: list[Job]) -> bool:
    return (
        not os.environ.get("OLAKIT_BASE_URL")
        and not os.environ.get("OLAKIT_EMBEDDED_URL")
        and any(j.parameters.get("source") == "live" for j in jobs)
    )


def collect_figures(jobs: list[Job], figures_dir: Path) -> list[str]:
    """Copy each successful run's figures to figures_dir/<run name>__<figure file>."""
    import shutil

    copied = []
    for job in jobs:
        folder = Path(job.parameters["out_dir"]) / "figures"
        if job.status != "ok" or not folder.is_dir():
            continue
        for f in sorted(folder.iterdir()):
            if f.is_file() and f.suffix in (".png", ".pdf"):
                figures_dir.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, figures_dir / f"{job.name}__{f.name}")
                copied.append(f"{job.name}__{f.name}")
    return copied


LIVE_THREADS = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
"""Thread limits for the kernels of live notebooks: the embedded model's llama.cpp threads have the cores."""


ALWAYS_LIVE = ("geek_ablation", "review_loop", "answer_stages")
"""Notebooks that always call a model (they have no ``source`` parameter)."""


def is_live(job: Job) -> bool:
    """Whether a run calls a model: its ``source`` parameter is ``live``, or its notebook is one of ALWAYS_LIVE.

    >>> is_live(Job("x", "notebooks/geek_ablation.ipynb", {}, "o"))
    True
    >>> is_live(Job("y", "notebooks/reproduce_olagpt.ipynb", {}, "o"))
    False
    """
    if "source" in job.parameters:
        return job.parameters["source"] == "live"
    return Path(job.notebook).stem in ALWAYS_LIVE


def start_embedded(log_path: Path, n_parallel: int = 4) -> tuple[subprocess.Popen, str]:
    """The embedded model served by an ``olakit serve`` process whose log goes to ``log_path``; (process, URL)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "olakit.cli", "serve", "--n-parallel", str(n_parallel), "--verbosity", "3"],
        stdout=subprocess.PIPE,
        stderr=open(log_path, "w"),
        text=True,
    )
    first = proc.stdout.readline()
    m = re.search(r" at (http\S+)", first)
    if not m:
        proc.kill()
        raise DataError(f"the embedded model did not start; see {log_path}")
    return proc, m.group(1)


def run_sweep(
    path: str | os.PathLike,
    *,
    run_id: str | None = None,
    parallel: int | None = None,
    runs_dir: str | os.PathLike = "runs",
    results_dir: str | os.PathLike = "results",
    figures_dir: str | os.PathLike | None = None,
) -> dict:
    """Run every job of the sweep file; write runs/<run_id>/index.json; copy figures to figures_dir when given;
    return the index.

    Scheduling, so that the model does not share the cores with CPU-heavy analysis: the runs on recorded outputs
    first, ``parallel`` at a time; then the live runs, at most 2 at a time, their kernels limited to one BLAS/torch
    thread (LIVE_THREADS) while the embedded model (an ``olakit serve`` process, its log in
    runs/<run_id>/embedded-server.log) has the cores."""
    spec = load_spec(path)
    run_id = run_id or spec.get("run_id") or f"{Path(path).stem}-{_dt.datetime.now(_dt.UTC):%Y%m%dT%H%M%S}"
    runs_dir, results_dir = Path(runs_dir), Path(results_dir)
    jobs = expand(spec, run_id, runs_dir, results_dir)
    (runs_dir / run_id).mkdir(parents=True, exist_ok=True)
    parallel = int(parallel or spec.get("parallel") or 2)
    live = [j for j in jobs if is_live(j)]
    recorded = [j for j in jobs if j not in live]
    server, server_log = None, None
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        list(pool.map(_execute, recorded))
    saved = {k: os.environ.get(k) for k in [*LIVE_THREADS, "OLAKIT_EMBEDDED_URL"]}
    try:
        if live:
            os.environ.update(LIVE_THREADS)
            if _needs_embedded(live):
                server_log = runs_dir / run_id / "embedded-server.log"
                server, url = start_embedded(server_log)
                os.environ["OLAKIT_EMBEDDED_URL"] = url  # the kernels inherit it: one model for all
                log.info("embedded model at %s; its log: %s", url, server_log)
            with ThreadPoolExecutor(max_workers=min(parallel, 2)) as pool:
                list(pool.map(_execute, live))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    index = {
        "run_id": run_id,
        "sweep": str(path),
        "parallel": parallel,
        "wall_s": round(time.perf_counter() - t0, 2),
        "cache_dir": os.environ.get("OLAKIT_CACHE_DIR", "~/.cache/olakit/llm"),
        "calls": {
            k: sum(j.calls.get(k, 0) for j in jobs) for k in ("requests", "unique_prompts", "paid", "cached", "failed")
        },
        "runs": [asdict(j) for j in jobs],
        "server_log": str(server_log) if server_log else None,
    }
    if figures_dir is not None:
        index["figures"] = collect_figures(jobs, Path(figures_dir))
    write_atomic(runs_dir / run_id / "index.json", lambda tmp: tmp.write_text(json.dumps(index, indent=1)))
    return index
