"""A sweep's notebook runs as Dask tasks (``olakit sweep --executor dask``).

The cluster, as Dask users name one (``connect``): a ``Client`` given from Python (``run_sweep(client=...)``, e.g.
from dask-jobqueue or dask-kubernetes), ``--scheduler ADDRESS`` (``tcp://HOST:8786``, or a bare ``HOST:8786``),
``--scheduler-file FILE`` (what ``dask scheduler --scheduler-file`` writes), Dask's own ``scheduler-address`` setting
(``DASK_SCHEDULER_ADDRESS``, or the dask config files), else a ``LocalCluster`` of worker processes on this
machine, quiet and without a dashboard.

Each run is one task that runs papermill on a worker; its outputs go to the sweep's directories, which must be paths
every worker sees. Before anything runs, every worker is checked (``preflight``): the notebooks, the data, the
output folders, and the same olakit (version and commit) and data manifest as this machine. A task whose worker dies
is run again by Dask on another worker, and the index counts the attempts; the answer cache (Redis,
``OLAKIT_CACHE_URL``, for workers on several machines) keeps the calls already paid.

A task carries the sweep's non-secret settings (endpoint URL and model, cache URL or directory, data directory,
thread limits) to its notebook's kernel only: the worker's own environment is left as it was, so one sweep's
settings never reach the next. API keys are never sent: each worker reads its own from its environment.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import olakit
from olakit import env
from olakit.data.files import RESOURCES
from olakit.data.loaders import resolve_data_dir
from olakit.data.provenance import commit
from olakit.env import endpoint_names
from olakit.errors import DataError, require_extra
from olakit.notebook.jobs import Job, execute, resolve_notebook

PASSED_ON = (
    *(name for name in endpoint_names() if not name.endswith("_API_KEY")),
    *(f"OLAKIT_{name.upper()}" for name in env.PASSED_ON),
)
"""The settings a task takes to its worker (never a key: OLAKIT_*_API_KEY stays on each machine)."""


SCHEMES = ("tcp", "tls", "inproc", "ucx", "ws", "wss")


def scheduler_address(scheduler: str | None = None) -> str | None:
    """The scheduler to use: ``scheduler`` as given, else Dask's own ``scheduler-address`` setting
    (``DASK_SCHEDULER_ADDRESS`` or the dask config files); a bare ``HOST:PORT`` is a tcp address.

    >>> scheduler_address("10.0.0.5:8786"), scheduler_address("tls://a:8786")
    ('tcp://10.0.0.5:8786', 'tls://a:8786')
    """
    if not scheduler:
        import dask

        scheduler = dask.config.get("scheduler-address", None)
    if not scheduler:
        return None
    scheme, sep, rest = str(scheduler).partition("://")
    if not sep:
        return f"tcp://{scheduler}"
    if scheme not in SCHEMES:
        raise DataError(f"scheduler {scheduler!r}: give its address as tcp://HOST:8786 (or HOST:8786)")
    return scheduler


def listening(address: str) -> None:
    """OSError at once when nothing listens at a tcp or tls scheduler address (the refusal, or the name that does not
    resolve), where Dask's Client would retry a refused connection until its timeout and then say it timed out. A
    scheduler that listens logs the probe at INFO ("Connection from ... closed before handshake completed")."""
    from distributed.comm import parse_address, parse_host_port

    scheme, location = parse_address(address)
    if scheme in ("tcp", "tls"):
        socket.create_connection(parse_host_port(location), timeout=5).close()


def local_cluster(**kwargs):
    """A LocalCluster (its keyword arguments) whose nannies give each worker process Dask's per-worker limits
    (``distributed.nanny.pre-spawn-environ``: OMP_NUM_THREADS=1, MKL_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1,
    MALLOC_TRIM_THRESHOLD_) through the nanny's own ``env`` setting, set in the worker and inherited by the kernels it
    starts, instead of writing them into this process before each worker starts (which Dask does with its default
    config, and never undoes: every process started from here afterwards, a kernel, the embedded server, torch's
    embedder, would compute on one thread). Dask's own rule stays: with PYTHONHASHSEED unset here, its nannies set it
    (6640) in this process for consistent hashing across workers."""
    dd = require_extra("dask.distributed", "cluster", "the dask executor")
    import dask

    spawn = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    hashing = {k: v for k, v in spawn.items() if k == "PYTHONHASHSEED"}
    env = {k: str(v) for k, v in spawn.items() if k != "PYTHONHASHSEED"} | dict(kwargs.pop("env", None) or {})
    with dask.config.set({"distributed.nanny.pre-spawn-environ": hashing}):  # the nannies read it as they are made
        return dd.LocalCluster(env=env, **kwargs)


def connect(scheduler: str | None, workers: int, scheduler_file: str | None = None):
    """A Dask client: to the scheduler of ``scheduler_file`` or at ``scheduler_address(scheduler)``, else to a new
    LocalCluster of ``workers`` processes (one thread each, no dashboard, no log lines); DataError when the
    scheduler cannot be reached. Returns (client, the LocalCluster or None)."""
    dd = require_extra("dask.distributed", "cluster", "the dask executor")
    logging.getLogger("distributed").setLevel(logging.ERROR)  # a LocalCluster's start and stop: 35 INFO lines
    Client = dd.Client

    if scheduler_file and not Path(scheduler_file).is_file():  # dask's Client would wait for it to appear
        raise DataError(
            f"the scheduler file {scheduler_file} is not there: start `dask scheduler --scheduler-file "
            f"{scheduler_file}` first, on a file system this machine sees"
        )
    address = None if scheduler_file else scheduler_address(scheduler)
    if scheduler_file or address:
        where = f"the scheduler file {scheduler_file}" if scheduler_file else f"the Dask scheduler at {address}"
        try:
            if scheduler_file:
                return Client(scheduler_file=scheduler_file, timeout="5s"), None
            listening(address)
            return Client(address, timeout="5s"), None
        except (OSError, TimeoutError, ValueError) as exc:
            raise DataError(
                f"{where} is unreachable ({exc}); start it with `dask scheduler` there, or give no scheduler for a "
                "local cluster"
            ) from None
    cluster = local_cluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",  # None still binds :8787 for the scheduler's HTTP routes
        scheduler_kwargs={"dashboard": False},
        silence_logs=logging.ERROR,
    )
    return Client(cluster), cluster


def fingerprint() -> dict[str, str | None]:
    """What every worker must share with this machine: olakit's version and commit (None outside a git checkout)
    and the sha256 of the data manifest (olakit/resources/manifest.json)."""
    return {
        "olakit": olakit.__version__,
        "commit": commit(),
        "data manifest": hashlib.sha256((RESOURCES / "manifest.json").read_bytes()).hexdigest()[:16],
    }


def _check_worker(
    notebooks: Sequence[str], datasets: Sequence[str], folders: Sequence[str], token: str, env, here: dict
) -> list:
    """On a worker, with the sweep's settings (its environment left alone): what it lacks to run the sweep
    (notebooks, data, shared folders) and where it differs from the sweep's machine (olakit, data manifest)."""
    problems = [
        f"{name} {theirs} here, {mine} on the sweep's machine"
        for (name, mine), theirs in zip(here.items(), fingerprint().values())
        if mine != theirs and mine is not None and theirs is not None
    ]
    problems += [f"notebook {nb} not found" for nb in notebooks if not resolve_notebook(nb).is_file()]
    try:
        data = resolve_data_dir(env.get("OLAKIT_DATA_DIR"))
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
        found = client.run(
            _check_worker, notebooks, datasets, [str(f) for f in folders], token, settings({}), fingerprint()
        )
    finally:
        for folder in folders:
            (folder / token).unlink(missing_ok=True)
    if not found:
        raise DataError("the Dask cluster has no workers")
    bad = {w: p for w, p in found.items() if p}
    if bad:
        raise DataError("; ".join(f"worker {w}: {', '.join(p)}" for w, p in sorted(bad.items())))


def _run_task(job: Job, env: dict[str, str]) -> Job:
    """On a worker: the run, its kernel given the sweep's settings (the worker's environment left alone). Each start
    is counted in a file beside the executed notebook (the runs folder every worker sees), so a run Dask starts
    again after its worker died says so."""
    from dask.distributed import get_worker

    with attempts_file(job).open("a") as log:
        log.write(f"{get_worker().address}\n")
    done = execute(job, env=env)
    return replace(done, worker=get_worker().address)


def attempts_file(job: Job) -> Path:
    return Path(job.output).with_suffix(".attempts")


def run_jobs(client, jobs: Sequence[Job], env: dict[str, str]) -> list[Job]:
    """Run the jobs as Dask tasks (a task whose worker dies is rerun elsewhere) and return them as they ended."""
    if not jobs:
        return []
    futures = [
        client.submit(_run_task, job, settings(env), key=f"olakit-{job.name}-{uuid.uuid4().hex[:8]}", pure=False)
        for job in jobs
    ]
    done = client.gather(futures)
    for job in done:  # every start, each with its kernel-start retries beyond the first
        starts = attempts_file(job).read_text().splitlines() if attempts_file(job).is_file() else [job.worker]
        attempts_file(job).unlink(missing_ok=True)
        job.attempts = len(starts) + job.attempts - 1
    return done
