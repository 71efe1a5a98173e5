"""A sweep's notebook runs as Dask tasks (``olakit sweep --executor dask [--scheduler tcp://HOST:8786]``).

Each run is one task that runs papermill on a worker; its outputs go to the sweep's directories, which must be paths
every worker sees (checked before anything runs, as are the notebooks and the data on every worker). Without a
scheduler address a ``LocalCluster`` of worker processes is started on this machine. A task whose worker dies is
run again by Dask on another worker; the answer cache (Redis, ``OLAKIT_CACHE_URL``, for workers on several
machines) keeps the calls already paid.

A task carries the sweep's non-secret settings (endpoint URL and model, cache URL or directory, data directory,
thread limits); API keys are never sent: each worker reads its own from its environment.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from olakit.data.loaders import resolve_data_dir
from olakit.errors import DataError, require_extra
from olakit.notebook.jobs import Job, execute, resolve_notebook

PASSED_ON = (
    "OLAKIT_BASE_URL",
    "OLAKIT_MODEL",
    "OLAKIT_CACHE_URL",
    "OLAKIT_CACHE_DIR",
    "OLAKIT_EMBEDDED_URL",
    "OLAKIT_EMBEDDED_MODEL",
    "OLAKIT_DATA_DIR",
    *(f"OLAKIT_{role}_{var}" for role in ("ANSWERER", "REVIEWER", "JUDGE", "DIRECT") for var in ("BASE_URL", "MODEL")),
)
"""The settings a task takes to its worker (never a key: OLAKIT_*_API_KEY stays on each machine)."""


def connect(scheduler: str | None, workers: int):
    """A Dask client: to the scheduler at ``scheduler``, or to a new LocalCluster of ``workers`` processes (one
    thread each); DataError when the scheduler cannot be reached. Returns (client, cluster or None)."""
    dd = require_extra("dask.distributed", "cluster", "the dask executor")
    Client, LocalCluster = dd.Client, dd.LocalCluster

    if scheduler:
        if not scheduler.startswith(("tcp://", "tls://", "inproc://", "ucx://")):
            raise DataError(f"scheduler {scheduler!r}: give its address as tcp://HOST:8786")
        try:
            return Client(scheduler, timeout="5s"), None
        except (OSError, TimeoutError) as exc:
            raise DataError(
                f"the Dask scheduler at {scheduler} is unreachable ({exc}); start it with "
                f"`dask scheduler` there, or leave out --scheduler for a local cluster"
            ) from None
    cluster = LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    return Client(cluster), cluster


def _check_worker(notebooks: Sequence[str], datasets: Sequence[str], folders: Sequence[str], token: str, env) -> list:
    """On a worker, with the sweep's settings: what it lacks to run the sweep (notebooks, data, shared folders)."""
    os.environ.update(env)
    problems = [f"notebook {nb} not found" for nb in notebooks if not resolve_notebook(nb).is_file()]
    try:
        data = resolve_data_dir()
        missing = [d for d in datasets if not (data / d).is_dir()]
        if missing:
            problems.append(f"no data for {', '.join(missing)} in {data}")
    except DataError as exc:
        problems.append(f"no data ({exc})")
    for folder in folders:
        if not (Path(folder) / token).is_file():
            problems.append(f"does not see {folder} (the sweep's outputs go there: give a path every worker sees)")
    return problems


def settings(env: dict[str, str]) -> dict[str, str]:
    """What a task takes along: this process's PASSED_ON settings and ``env`` (thread limits)."""
    return {k: os.environ[k] for k in PASSED_ON if os.environ.get(k)} | env


def preflight(client, jobs: Sequence[Job], folders: Sequence[Path]) -> None:
    """Every worker has the notebooks and this machine's datasets and sees the output folders, or one DataError says
    which worker lacks what, before any run starts."""
    token = f".olakit-probe-{uuid.uuid4().hex}"
    try:
        datasets = sorted(p.name for p in resolve_data_dir().iterdir() if p.is_dir())
    except DataError:
        datasets = []  # no data here: each worker must find its own
    for folder in folders:
        (folder / token).write_text("")
    try:
        notebooks = sorted({j.notebook for j in jobs})
        found = client.run(_check_worker, notebooks, datasets, [str(f) for f in folders], token, settings({}))
    finally:
        for folder in folders:
            (folder / token).unlink(missing_ok=True)
    if not found:
        raise DataError("the Dask cluster has no workers")
    bad = {w: p for w, p in found.items() if p}
    if bad:
        raise DataError("; ".join(f"worker {w}: {', '.join(p)}" for w, p in sorted(bad.items())))


def _run_task(job: Job, env: dict[str, str]) -> Job:
    """On a worker: the sweep's settings into the environment (the kernel inherits them), then the run."""
    from dask.distributed import get_worker

    os.environ.update(env)
    done = execute(job)
    return replace(done, worker=get_worker().address)


def run_jobs(client, jobs: Sequence[Job], env: dict[str, str]) -> list[Job]:
    """Run the jobs as Dask tasks (a task whose worker dies is rerun elsewhere) and return them as they ended."""
    if not jobs:
        return []
    futures = [
        client.submit(_run_task, job, settings(env), key=f"olakit-{job.name}-{uuid.uuid4().hex[:8]}", pure=False)
        for job in jobs
    ]
    return client.gather(futures)
