"""``olakit sweep FILE.yaml``: run notebooks over parameter grids through papermill, several at once, sharing
one cache, with the executed notebooks under runs/<run_id>/ and an index of what ran.

    run_id: paper          # optional; default: the file name and a UTC timestamp
    parallel: 2            # notebooks at once (and the local Dask cluster's workers)
    executor: local        # optional: local (default) or dask
    scheduler: tcp://HOST:8786   # optional, with dask: a running scheduler (or HOST:8786, or scheduler_file: FILE;
                                 # default: $DASK_SCHEDULER_ADDRESS or dask's config, else a LocalCluster here)
    notebooks:
      - notebook: notebooks/template_count.ipynb
        parameters: {source: recorded}
        grid: {tie_rule: [first, random]}     # one run per combination

Each run writes its outputs to results/<run_id>/<name> (its ``out_dir`` parameter) and its executed notebook to
runs/<run_id>/<name>.ipynb; runs/<run_id>/index.json (SweepIndex) lists every run with its parameters, status
(``ok``, ``failed``, or ``kept``: its result's inputs were unchanged, so its notebook was not executed again;
olakit.notebook.inputs), wall time, the calls its log reports and where it ran; ``force`` makes every result
again. Live notebooks share the cache ($OLAKIT_CACHE_DIR, or Redis at $OLAKIT_CACHE_URL) and, when no endpoint
is configured, the machine's one embedded model, loaded by the first live call that misses the cache
(olakit.llm.daemon), so a rerun is served from the cache with no model loaded. With ``executor: dask`` the runs are
Dask tasks (olakit.notebook.cluster).
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import logging
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from olakit.config import Config, read_config_file
from olakit.data.files import find_file, write_atomic
from olakit.env import embedded_threads, endpoint_vars, environment
from olakit.errors import DataError
from olakit.llm.cache import default_cache_dir, open_cache, redact
from olakit.llm.daemon import machine_server
from olakit.llm.endpoint import Endpoint
from olakit.llm.local import SLOTS, server_metrics
from olakit.methods import BUILTIN
from olakit.names import plural
from olakit.notebook import cluster
from olakit.notebook.inputs import unchanged
from olakit.notebook.jobs import Job, execute, resolve_notebook
from olakit.notebook.parameters import METHOD, check_parameters, config_type, parameter_defaults
from olakit.runner import endpoint as role_endpoint

log = logging.getLogger("olakit")


class SweepSettings(Config):
    """How a sweep runs: the top-level keys of a sweep file and the flags of ``olakit sweep`` (a flag given
    overrides the file)."""

    run_id: str | None = None
    """The sweep's name, its folder under runs/ and results/ (default: the file's name and a UTC timestamp)."""
    parallel: Annotated[int, Field(ge=1)] = 2
    """Notebooks at once (and the local Dask cluster's workers)."""
    executor: Literal["local", "dask"] | None = None
    """Local processes or Dask tasks (default: local; dask when a dask Client is given from Python)."""
    scheduler: str | None = None
    """With dask: tcp://HOST:8786 or HOST:8786 (default: $DASK_SCHEDULER_ADDRESS or dask's config, else a
    LocalCluster here)."""
    scheduler_file: str | None = None
    """With dask: the file ``dask scheduler --scheduler-file`` wrote."""
    batch: bool = False
    """The live runs answer through the provider's Batch API (``$OLAKIT_BATCH`` in their kernels; olakit.llm.batch)."""


class SweepEntry(Config):
    """One notebook of a sweep file: its fixed parameters and the grid of the rest (one run per combination)."""

    notebook: str
    """The notebook's path (or its name among olakit's notebooks)."""
    name: str | None = None
    """The runs' name (default: the notebook's); a grid point adds ``__key-value`` for each key."""
    parameters: dict[str, Any] = {}
    """Parameters every run of the entry gets: the notebook's own and the settings of its config type."""
    grid: dict[str, Annotated[list, Field(min_length=1)]] = {}
    """Parameter name -> the values to run (a single value is one run)."""

    @field_validator("grid", mode="before")
    @classmethod
    def _points(cls, grid):
        """A single value where a list of points is expected is that one point (the same forms as everywhere)."""
        if isinstance(grid, dict):
            return {k: v if isinstance(v, list) else [v] for k, v in grid.items()}
        return grid


class SweepFile(SweepSettings):
    """A sweep file: the sweep's settings and its notebooks."""

    notebooks: Annotated[list[SweepEntry], Field(min_length=1)]
    """The notebooks to run, each with its parameters and grid."""


def load_spec(path: str | os.PathLike) -> SweepFile:
    """Read and check a sweep file; one DataError or ConfigError says what is wrong and where."""
    path = find_file(path, own="sweeps", suffix=".yaml")
    spec = read_config_file(SweepFile, path, "sweep file")
    entries = []
    for i, entry in enumerate(spec.notebooks):
        where = f"{path}: notebooks[{i}]"
        try:  # a path in the file is the file's; a name, one of olakit's notebooks
            notebook = resolve_notebook(entry.notebook, base=path.parent)
        except DataError as exc:
            raise DataError(f"{where}: notebook {exc}") from None
        if "out_dir" in entry.parameters or "out_dir" in entry.grid:
            raise DataError(f"{where}: out_dir is set by the sweep (results/<run_id>/<name>)")
        entry = _methods_from(entry, path.parent)
        check_parameters(notebook, entry.parameters, entry.grid, where)
        entries.append(entry.replace(notebook=str(notebook), name=entry.name or Path(entry.notebook).stem))
    return spec.replace(notebooks=entries)


def _method_path(spec, base: Path):
    """A method named ``file.py:object`` in a sweep file: its file is the sweep file's folder's (an absolute path as
    it is); any other name as given."""
    if isinstance(spec, str) and ".py:" in spec:
        file, _, name = spec.rpartition(":")
        return f"{Path(base, file) if not Path(file).is_absolute() else file}:{name}"
    return spec


def _methods_from(entry: SweepEntry, base: Path) -> SweepEntry:
    """The entry with its ``method`` parameter (and grid values) resolved as paths inside the file are."""
    params = {k: _method_path(v, base) if k == METHOD else v for k, v in entry.parameters.items()}
    grid = {k: [_method_path(v, base) for v in vs] if k == METHOD else vs for k, vs in entry.grid.items()}
    return entry.replace(parameters=params, grid=grid)


def _slug(value) -> str:
    if isinstance(value, str) and ".py:" in value:  # a method's file: named by the file's name, wherever it is
        file, _, name = value.rpartition(":")
        value = f"{Path(file).name}:{name}"
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")[:40] or "x"


def expand(spec: SweepFile, run_id: str, runs_dir: Path, results_dir: Path) -> list[Job]:
    """One Job per notebook and grid point, with its out_dir and executed-notebook path."""
    jobs, seen = [], set()
    for entry in spec.notebooks:
        base = entry.name or Path(entry.notebook).stem
        keys = list(entry.grid)
        for values in itertools.product(*(entry.grid[k] for k in keys)) if keys else [()]:
            point = dict(zip(keys, values))
            name = base + "".join(f"__{k}-{_slug(v)}" for k, v in point.items())
            if name in seen:
                raise DataError(f"two sweep runs are both named {name!r}; give the entries distinct 'name's")
            seen.add(name)
            params = {**entry.parameters, **point, "out_dir": str(results_dir / run_id / name)}
            jobs.append(Job(name, entry.notebook, params, str(runs_dir / run_id / f"{name}.ipynb")))
    return jobs


@dataclass
class SweepIndex:
    """What a sweep did (runs/<run_id>/index.json): its settings, each run (Job: its status ``ok``, ``failed`` or
    ``kept``), the calls over them, the embedded server's work, the figures copied."""

    run_id: str
    sweep: str
    config: dict
    """The sweep's settings and notebooks (SweepFile), as read, flags applied."""
    executor: str
    scheduler: str | None
    parallel: int
    threads: dict
    wall_s: float
    cache: str
    calls: dict
    runs: list[Job]
    server_log: str | None = None
    server: dict | None = None
    figures: list[str] = field(default_factory=list)
    config_type: str = "SweepFile"

    def as_dict(self) -> dict:
        return {**asdict(self), "runs": [asdict(j) for j in self.runs]}


def _needs_embedded(live: list[Job]) -> bool:
    """Whether the sweep starts the embedded model: live runs and no endpoint configured."""
    return bool(live) and not endpoint_vars()[0].base_url and not environment().embedded_url


def longest_first(jobs: list[Job], previous_index: Path) -> list[Job]:
    """The jobs ordered by the wall time their namesakes took in the previous run of this sweep (longest first,
    so that no long run starts last); jobs without a previous time keep their place ahead of timed ones.

    >>> jobs = [Job("a", "x", {}, "o"), Job("b", "x", {}, "o"), Job("c", "x", {}, "o")]
    >>> [j.name for j in longest_first(jobs, Path("/nonexistent/index.json"))]
    ['a', 'b', 'c']
    """
    try:
        before = {r["name"]: float(r["wall_s"]) for r in json.loads(previous_index.read_text())["runs"]}
    except (OSError, ValueError, KeyError, TypeError):
        return list(jobs)
    return sorted(jobs, key=lambda j: -before.get(j.name, float("inf")))


def _served(url: str, before: dict | None = None) -> dict | None:
    """What the embedded server reports of its work (its /metrics) since ``before`` (an earlier reading; the server
    may be the machine's, shared with other processes): tokens evaluated and generated, and its generation speed
    per slot (the figure the oversubscription benchmark compares)."""
    try:
        m = server_metrics(url)
    except OSError:
        return None
    if before:
        m = {k: v - before.get(k, 0.0) for k, v in m.items()}
    seconds = m.get("tokens_predicted_seconds_total", 0.0)
    return {
        "prompt_tokens_evaluated": int(m.get("prompt_tokens_total", 0)),
        "prompt_tokens_reused": int(m.get("prompt_tokens_cached_total", 0)),
        "tokens_generated": int(m.get("tokens_predicted_total", 0)),
        "generation_s": round(seconds, 3),
        "generated_tokens_per_s": round(m.get("tokens_predicted_total", 0) / seconds, 3) if seconds else None,
    }


def _what_served(shared, before: dict) -> tuple[dict | None, Path | None]:
    """After the runs: (what the machine's embedded server did for this sweep, its log), from the server running now
    (it stops once no process uses it, GRACE s after the last: olakit.llm.daemon); (None, None) when no live call
    missed the cache and none was loaded."""
    now = machine_server(start=False)
    if now is None:
        log.info("every live call was in the cache: no embedded model was loaded")
        return None, None
    if shared is None:
        log.info("embedded model at %s (started by a live run); its log: %s", now.base_url, now.log)
    return _served(now.base_url, before if shared is not None and shared.pid == now.pid else {}), Path(now.log)


def collect_figures(jobs: list[Job], figures_dir: Path) -> list[str]:
    """Copy each successful (or kept) run's figures to figures_dir/<run name>__<figure file>."""
    import shutil

    copied = []
    for job in jobs:
        folder = Path(job.out_dir) / "figures"
        if job.status not in ("ok", "kept") or not folder.is_dir():
            continue
        for f in sorted(folder.iterdir()):
            if f.is_file() and f.suffix in (".png", ".pdf"):
                figures_dir.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, figures_dir / f"{job.name}__{f.name}")
                copied.append(f"{job.name}__{f.name}")
    return copied


def thread_rules(cores: int, parallel: int) -> dict:
    """How a sweep shares the machine's cores, so that no phase oversubscribes them:

    - recorded runs go first, ``parallel`` at a time, each kernel's BLAS/torch pools cut to its share of the
      cores (``cores // parallel``, at least 1);
    - the live runs follow, each in the first slot a run leaves (``run_local``), at most 2 at a time (a live
      kernel mostly waits on the model), each with 1 BLAS/torch thread, while the embedded server (the
      machine's, olakit.llm.daemon, whose defaults these two figures state) computes on every core with SLOTS
      parallel slots (each live kernel's client sends at most SLOTS calls at once, one per slot, so each keeps its
      prompt prefix).

    ``server_threads`` is ``embedded_threads(cores)``: ``cores``, unless the environment says otherwise.

    >>> rules = thread_rules(2, 2)
    >>> rules["recorded_threads"], rules["live_at_once"], rules["live_threads"], rules["server_slots"]
    (1, 2, 1, 4)
    >>> thread_rules(16, 4)["recorded_threads"]
    4
    """
    cores, parallel = max(1, int(cores)), max(1, int(parallel))
    return {
        "recorded_threads": max(1, cores // parallel),
        "live_at_once": min(parallel, 2),
        "live_threads": 1,
        "server_threads": embedded_threads(cores),
        "server_slots": SLOTS,
    }


EMBEDDED_RATE = 22.0
"""The embedded 0.5B model's generation speed per slot on 2 cores, tokens/s: what a sweep's plan says to expect."""
HEARTBEAT_S = 30.0
"""How often a running sweep says where it is."""
SLOW = 0.25
"""A live rate below this share of EMBEDDED_RATE is said at once: the machine is shared or oversubscribed."""


class Heartbeat:
    """While a sweep's notebooks run: every ``every`` seconds one line of which are running and for how long, and how
    many are done; with the embedded model, its generation rate per slot since the sweep began, and, once, a warning
    when it falls far below the plan's (SLOW x EMBEDDED_RATE), as it happens rather than at the end."""

    def __init__(self, total: int, embedded: bool, every: float = HEARTBEAT_S):
        self.total, self.embedded, self.every = total, embedded, every
        self.running: dict[str, float] = {}
        self.done = 0
        self.warned = False
        self.before: dict | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def started(self, job: Job) -> None:
        with self._lock:
            self.running[job.name] = time.monotonic()

    def finished(self, job: Job) -> None:
        with self._lock:
            self.running.pop(job.name, None)
            self.done += 1

    def line(self) -> str:
        """Where the sweep is, for a person."""
        now = time.monotonic()
        with self._lock:
            running = ", ".join(f"{n} ({now - t:.0f} s)" for n, t in self.running.items()) or "none"
            done = self.done
        text = f"running: {running}; {done} of {plural(self.total, 'notebook')} done"
        rate = self._rate()
        if rate is not None:
            text += f"; the embedded model generates {rate:.1f} tokens/s per slot"
        return text

    def _rate(self) -> float | None:
        if not self.embedded:
            return None
        server = machine_server(start=False)
        if server is None:
            return None
        if self.before is None:
            try:
                self.before = server_metrics(server.base_url)
            except OSError:
                return None
            return None
        served = _served(server.base_url, self.before)
        return (served or {}).get("generated_tokens_per_s")

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            line = self.line()
            log.info("%s", line)
            rate = self._rate() if self.embedded and not self.warned else None
            if rate is not None and rate < SLOW * EMBEDDED_RATE:
                self.warned = True
                log.warning("the embedded model generates %.1f tokens/s per slot, far below the %.0f the plan "
                            "assumed: the machine is busy with another process or oversubscribed; the live runs will "
                            "take about %.0f times longer than planned", rate, EMBEDDED_RATE,
                            EMBEDDED_RATE / max(rate, 0.01))  # fmt: skip


def run_local(
    recorded: list[Job], live: list[Job], parallel: int, rules: dict, env: dict[str, str], beat: Heartbeat | None = None
) -> None:
    """The jobs on this machine by thread_rules: the recorded ones first, then the live ones, ``parallel`` kernels
    at a time in all and at most ``live_at_once`` live ones; a live run takes the first free slot, without waiting
    for the last recorded run to end. ``beat`` hears each run start and end (Heartbeat)."""
    gate = threading.BoundedSemaphore(rules["live_at_once"])
    live_env = {**env, **thread_env(rules["live_threads"])}
    recorded_env = {**env, **thread_env(rules["recorded_threads"])}

    def run(job: Job, env: dict[str, str]) -> Job:
        if beat is not None:
            beat.started(job)
        try:
            return execute(job, env=env)
        finally:
            if beat is not None:
                beat.finished(job)

    def one(job: Job) -> Job:
        if job in live:
            with gate:
                return run(job, live_env)
        return run(job, recorded_env)

    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        list(pool.map(one, [*recorded, *live]))


def thread_env(n: int) -> dict[str, str]:
    """Environment that limits a kernel's OpenMP/MKL/OpenBLAS pools (torch's too) to ``n`` threads."""
    return {
        "OMP_NUM_THREADS": str(n),
        "MKL_NUM_THREADS": str(n),
        "OPENBLAS_NUM_THREADS": str(n),
        "NUMBA_NUM_THREADS": str(n),
        "TOKENIZERS_PARALLELISM": "false",
    }


ALWAYS_LIVE = ("geek_ablation", "review_loop", "answer_stages", "method")
"""Notebooks that always call a model (they have no ``source`` parameter)."""


def plan_lines(live: list[Job], embedded: bool) -> list[str]:
    """What the sweep's live runs will call, before any starts: per notebook its config's questions and, for the
    methods whose calls are known before they run (OlaGPT's: olakit.methods.BUILTIN, its ``calls``), the planned
    calls and token ceiling as ``olakit run`` prints them; and,
    when no endpoint is set, that they run on the embedded test model."""
    if not live:
        return []
    endpoint = Endpoint.embedded() if embedded else role_endpoint()
    lines, calls, ceiling = [f"plan: {plural(len(live), 'live notebook')} on {endpoint.model}"], 0, 0
    for job in live:
        path = resolve_notebook(job.notebook)
        kind = config_type(path, job.parameters)
        cfg = kind.from_mapping({**parameter_defaults(path), **job.parameters}) if kind else None
        method = next((m for m in BUILTIN.values() if cfg is not None and type(cfg) is m.config), None)
        stages = method.calls(cfg) if method is not None and method.calls is not None else None
        if stages is not None:
            n, top = sum(s.calls for s in stages), sum(s.calls * s.max_tokens for s in stages)
            calls, ceiling = calls + n, ceiling + top
            exact = "" if all(s.exact for s in stages) else "up to "
            lines.append(f"  {job.name:32} {exact}{plural(n, 'call')}, at most {top:,} completion tokens")
        elif cfg is not None:
            n = cfg.n_questions if cfg.n_questions is not None else "every"
            lines.append(f"  {job.name:32} {n} questions (its calls depend on the replies)")
    if calls:
        lines.append(
            f"  planned notebooks: {plural(calls, 'call')}, at most {ceiling:,} completion tokens (cached: free)"
        )
    if embedded:
        lines.append(
            "  no OLAKIT_BASE_URL: these run on the embedded test model on this machine's CPU (about "
            f"{EMBEDDED_RATE:.0f} tokens/s for every run at once: plumbing, not results); set OLAKIT_BASE_URL and "
            "OLAKIT_MODEL for a real endpoint"
        )
    return lines


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


def run_sweep(
    path: str | os.PathLike,
    *,
    run_id: str | None = None,
    parallel: int | None = None,
    runs_dir: str | os.PathLike = "runs",
    results_dir: str | os.PathLike = "results",
    figures_dir: str | os.PathLike | None = None,
    executor: str | None = None,
    scheduler: str | None = None,
    scheduler_file: str | os.PathLike | None = None,
    client=None,
    batch: bool | None = None,
    force: bool = False,
) -> SweepIndex:
    """Run every job of the sweep file whose result's inputs changed (every one with ``force``; the others are kept);
    write runs/<run_id>/index.json; copy figures to figures_dir when given; return the index.

    Scheduling (thread_rules): the runs on recorded outputs first, ``parallel`` at a time, their BLAS/torch pools
    cut to their share of the cores; then the live runs, each in the first slot that frees, at most 2 at a time
    with one such thread each, while the embedded model (the machine's server, loaded by the first live call that
    misses the cache, with its log in runs/<run_id>/embedded-server.log; one already running is shared)
    computes on every core.
    ``executor="dask"`` runs the same two phases, one after the other, as Dask tasks: on the cluster of
    ``client`` (a dask.distributed Client made by the caller, left open), of ``scheduler_file``, at ``scheduler``
    (``tcp://HOST:8786`` or ``HOST:8786``) or at Dask's own ``scheduler-address`` setting
    (``DASK_SCHEDULER_ADDRESS``), else on a LocalCluster of ``parallel`` worker processes (olakit.notebook.cluster)."""
    given = dict(
        run_id=run_id, parallel=parallel, executor=executor, scheduler=scheduler, scheduler_file=scheduler_file,
        batch=batch,
    )  # fmt: skip
    spec = load_spec(path)
    spec = spec.replace(**{k: v for k, v in given.items() if v is not None})  # a flag given overrides the file
    run_id = spec.run_id or f"{Path(path).stem}-{_dt.datetime.now(_dt.UTC):%Y%m%dT%H%M%S}"
    executor = spec.executor or ("dask" if client is not None else "local")
    scheduler, scheduler_file, parallel = spec.scheduler, spec.scheduler_file, spec.parallel
    given = scheduler or scheduler_file or client
    if given and executor != "dask":
        raise DataError(
            f"a scheduler ({scheduler or scheduler_file or client}) is for the dask executor; add --executor dask"
        )
    remote = executor == "dask" and (client is not None or scheduler_file or cluster.scheduler_address(scheduler))
    if remote and not endpoint_vars()[0].base_url:
        raise DataError(
            "a Dask cluster's workers need an endpoint they all reach: set OLAKIT_BASE_URL and OLAKIT_MODEL"
        )
    if remote and not environment().cache_url:
        raise DataError(
            "a Dask cluster's workers need a cache they all share: set OLAKIT_CACHE_URL=redis://HOST:6379/0"
        )
    if environment().cache_url:  # Redis down: one line now, before a cluster, the model or a kernel starts
        shared = open_cache()
        try:
            shared.store  # noqa: B018 -- connects and pings, or raises one CacheError naming the URL
        finally:
            shared.close()
    runs_dir, results_dir = Path(runs_dir).resolve(), Path(results_dir).resolve()  # the same path on every worker
    jobs = expand(spec, run_id, runs_dir, results_dir)
    for folder in (runs_dir / run_id, results_dir / run_id):
        folder.mkdir(parents=True, exist_ok=True)
    rules = thread_rules(os.cpu_count() or 1, parallel)
    t0 = time.perf_counter()
    for job in jobs if not force else ():  # a result made from what it would be made from now is kept
        if unchanged(resolve_notebook(job.notebook), job.parameters, job.out_dir):
            job.status = "kept"
            log.info("notebook %s: unchanged, kept", job.name)
    jobs_in_order = longest_first([j for j in jobs if j.status != "kept"], runs_dir / run_id / "index.json")
    live = [j for j in jobs_in_order if is_live(j)]
    if spec.batch and _needs_embedded(live):
        raise DataError(
            "batch: true needs an endpoint with a Batch API (set OLAKIT_BASE_URL); the embedded model has none"
        )
    for line in plan_lines(live, _needs_embedded(live)):  # before any kernel starts
        log.info("%s", line)
    recorded = [j for j in jobs_in_order if j not in live]
    shared, server_log, served, local_cluster, own_client, where = None, None, None, None, False, None
    before: dict = {}
    embedded = _needs_embedded(live)
    kernel_env: dict[str, str] = {"OLAKIT_BATCH": "1"} if spec.batch else {}  # given to each notebook's kernel
    try:
        if executor == "dask":
            if client is None:
                client, local_cluster = cluster.connect(scheduler, parallel, scheduler_file)
                own_client = True
            # read while the client is open: a closed one has no scheduler (the index once died on it, exit 1)
            where = "LocalCluster" if local_cluster is not None else client.scheduler.address
            cluster.preflight(client, jobs, [runs_dir / run_id, results_dir / run_id])
        if embedded:
            # the machine's embedded server is loaded by the first live run whose call misses the cache (a warm sweep
            # loads no model), with its log here; one already running is shared, and its counters read now
            kernel_env["OLAKIT_EMBEDDED_LOG"] = str(runs_dir / run_id / "embedded-server.log")
            shared = machine_server(start=False)
            if shared is not None:
                before = server_metrics(shared.base_url)
                log.info("embedded model already running at %s (%d slots), shared; its log: %s",
                         shared.base_url, shared.slots, shared.log)  # fmt: skip
        if client is not None:
            for phase, threads in ((recorded, rules["recorded_threads"]), (live, rules["live_threads"])):
                done = {j.name: j for j in cluster.run_jobs(client, phase, {**kernel_env, **thread_env(threads)})}
                for job in phase:
                    job.__dict__.update(done[job.name].__dict__)
        else:
            with Heartbeat(len(recorded) + len(live), embedded) as beat:
                run_local(recorded, live, parallel, rules, kernel_env, beat)
    finally:
        if embedded:
            served, server_log = _what_served(shared, before)
        if own_client:
            client.close()
        if local_cluster is not None:
            local_cluster.close()
    cache = environment().cache_url or str(default_cache_dir())
    index = SweepIndex(
        run_id=run_id,
        sweep=str(path),
        config=spec.as_dict(),
        executor=executor,
        scheduler=where,
        parallel=parallel,
        threads=rules,
        wall_s=round(time.perf_counter() - t0, 2),
        cache=redact(cache),
        calls={
            k: sum(j.calls.get(k, 0) for j in jobs) for k in ("requests", "unique_prompts", "paid", "cached", "failed")
        },  # fmt: skip
        runs=jobs,
        server_log=str(server_log) if server_log else None,
        server=served,
        figures=collect_figures(jobs, Path(figures_dir)) if figures_dir is not None else [],
    )
    text = json.dumps(index.as_dict(), indent=1)
    write_atomic(runs_dir / run_id / "index.json", lambda tmp: tmp.write_text(text))
    return index
