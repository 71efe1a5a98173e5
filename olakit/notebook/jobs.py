"""One notebook run: a notebook, its parameters and where its executed copy goes (Job), how it is run through
papermill (execute), here or on a Dask worker, and ``olakit notebook`` (run_notebook), one run checked first."""

from __future__ import annotations

import logging
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from olakit.data.files import find_file
from olakit.errors import DataError
from olakit.notebook.inputs import expected_parameters, unchanged
from olakit.notebook.parameters import check_parameters, parameter_defaults
from olakit.runlog import RunLog, claim_folder, read_log

log = logging.getLogger("olakit")


@dataclass
class Job:
    name: str
    notebook: str
    parameters: dict
    output: str
    status: str = "pending"
    """``pending``, ``ok``, ``failed``, or ``kept`` (its result's inputs were unchanged: not executed)."""
    error: str = ""
    """Why it failed, in one line: the exception the notebook raised (``DataError: source 'recordd' ...``)."""
    detail: str = ""
    """The end of papermill's report of the failure (the cell and its traceback), for the index."""
    wall_s: float = 0.0
    calls: dict = field(default_factory=dict)
    worker: str = "local"
    """Where it ran: ``local``, or the address of the Dask worker."""
    attempts: int = 0
    out_dir: str = ""
    """Where its result goes: its ``out_dir`` parameter (or its parameters cell's), resolved against the working
    directory of the command that runs it."""
    cwd: str = ""
    """The working directory its kernel runs in (the command's): relative paths in its parameters resolve there."""

    def __post_init__(self):
        self.cwd = self.cwd or os.getcwd()
        if not self.out_dir and self.parameters.get("out_dir"):
            self.out_dir = str(Path(self.cwd, self.parameters["out_dir"]))


def resolve_notebook(notebook: str, base: str | os.PathLike | None = None) -> Path:
    """A notebook by path (the working directory's, or ``base``'s for a path inside a file) or one of olakit's own by
    its name (``template_count``) or repository path (olakit.data.files.find_file); DataError when there is none."""
    return find_file(notebook, base=base, own="notebooks", suffix=".ipynb")


KERNEL_START_RACES = ("Kernel died before replying to kernel_info", "Address already in use", "Kernel didn't respond")
"""Errors of a kernel that lost the race for its ports to another starting at the same moment (TCP, where IPC is
not there: Windows), or that did not answer in time: retried."""

IPC = os.name == "posix"
"""Kernels talk over IPC sockets in a folder of their own where the system has them: no TCP port to pick, so two
kernels starting at the same moment (a sweep's, a Dask worker's) never take the same one (CI once saw 'Address
already in use' from jupyter_client's free-port pick)."""


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def own_line(exc: BaseException) -> str:
    """The failure's own line: for a notebook that raised, its exception's name and message (papermill's error
    carries them as ``ename`` and ``evalue``, under a banner naming the cell), else the exception itself.

    >>> own_line(ValueError("bad value"))
    'ValueError: bad value'
    """
    name, value = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    text = f"{name}: {value}" if name else f"{type(exc).__name__}: {exc}"
    return ANSI.sub("", text).strip().splitlines()[0] if text.strip() else type(exc).__name__


def _kernel_manager_class(env: dict[str, str], sockets: str | None = None):
    """A kernel manager class whose kernels start with ``env`` over this process's environment (which stays as it
    is), and talk over IPC sockets in the folder ``sockets`` when one is given (jupyter_client's own ``transport``
    and ``ip`` settings); nbclient makes and owns its instance, as it does its default one."""
    from jupyter_client.manager import AsyncKernelManager

    class WithEnv(AsyncKernelManager):
        async def start_kernel(self, **kw):
            if sockets:
                self.transport, self.ip = "ipc", os.path.join(sockets, "k")
            kw["env"] = {**os.environ, **kw.get("env", {}), **env}
            return await super().start_kernel(**kw)

    return WithEnv


class _KnownParameters(logging.Filter):
    """papermill warns "Passed unknown parameter" for a setting of a notebook's config, which its parameters cell
    does not list: olakit has checked every name against the notebook and its config (check_parameters) before
    the kernel starts, so the warning says nothing and is dropped from the terminal."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Passed unknown parameter:")


def execute(job: Job, attempts: int = 3, env: dict[str, str] | None = None) -> Job:
    """Run one notebook through papermill (a kernel that failed to start because of a port race is started again,
    up to ``attempts`` times), its kernel given ``env`` besides this process's environment; the job says how it
    went."""
    import papermill as pm

    papermill_log = logging.getLogger("papermill")
    if not any(isinstance(f, _KnownParameters) for f in papermill_log.filters):
        papermill_log.addFilter(_KnownParameters())
    t0 = time.perf_counter()
    notebook = resolve_notebook(job.notebook)
    env = {**(env or {}), "OLAKIT_NOTEBOOK": str(notebook)}  # the kernel digests the notebook it runs
    for attempt in range(1, attempts + 1):
        job.attempts = attempt
        # a short private folder for the kernel's sockets (a socket's path is limited to about 100 characters)
        sockets = tempfile.TemporaryDirectory(prefix="olakit-kernel-") if IPC else None
        try:
            pm.execute_notebook(
                str(notebook),
                job.output,
                parameters=job.parameters,
                kernel_name="python3",
                progress_bar=False,
                request_save_on_cell_execute=False,  # written once at the end, not after every cell
                cwd=job.cwd,  # the command's: a relative path resolves where the user typed it
                extra_arguments=["--IPKernelApp.log_level=CRITICAL"],  # no TCP warning, no shutdown chatter
                kernel_manager_class=_kernel_manager_class(env, sockets.name if sockets else None),
            )
            job.status, job.error = "ok", ""
            break
        except Exception as exc:  # one failed notebook does not stop the others; the index says why
            job.status, job.error, job.detail = "failed", own_line(exc), ANSI.sub("", str(exc))[-1500:]
            if attempt == attempts or not any(race in str(exc) for race in KERNEL_START_RACES):
                break
            time.sleep(0.5 * attempt)
        finally:
            if sockets:
                sockets.cleanup()
    job.wall_s = round(time.perf_counter() - t0, 2)
    done = read_log(job.out_dir) if job.status == "ok" and job.out_dir else None
    if done is not None:
        job.calls = done.summary()["total"]
    log.info("notebook %s: %s in %.1f s", job.name, job.status, job.wall_s)
    return job


def notebook_path(notebook: str) -> Path:
    """A notebook named as ``template_count`` (one of olakit's notebooks) or by its path; DataError when there is
    none."""
    try:
        return resolve_notebook(notebook)
    except DataError as exc:
        raise DataError(f"notebook {exc} (give a path, or the name of one of olakit's notebooks)") from None


def keep_or_execute(job: Job, force: bool = False, attempts: int = 3, env: dict[str, str] | None = None) -> Job:
    """The job's result kept where its inputs are unchanged (olakit.notebook.inputs; status ``kept``, calls none),
    else the notebook executed; ``force`` executes it whatever."""
    if not force and job.out_dir and unchanged(resolve_notebook(job.notebook), job.parameters, job.out_dir):
        job.status, job.calls = "kept", {}
        log.info("notebook %s: unchanged, kept", job.name)
        return job
    return execute(job, attempts, env)


def run_notebook(
    notebook: str, parameters: dict, output: str | os.PathLike | None = None, *, force: bool = False
) -> Job:
    """``olakit notebook``: one notebook through papermill in the working directory, every parameter name and its
    config checked before the kernel starts (a setting of the notebook's config is a parameter too: papermill alone
    warns "Passed unknown parameter" for each one the parameters cell does not list); its result kept instead when
    its inputs are unchanged (``force``: executed whatever). The executed notebook goes to ``output`` (default
    runs/<notebook>.ipynb in the working directory)."""
    path = notebook_path(notebook)
    check_parameters(path, parameters, {}, f"notebook {path.stem}")
    output = Path(output) if output is not None else Path("runs") / f"{path.stem}.ipynb"
    output.parent.mkdir(parents=True, exist_ok=True)
    out_dir = parameters.get("out_dir") or parameter_defaults(path).get("out_dir")  # the parameters cell's default
    job = Job(path.stem, str(path), dict(parameters), str(output), out_dir=str(Path.cwd() / out_dir) if out_dir else "")
    expected = expected_parameters(path, parameters)
    if job.out_dir and expected is not None:  # a folder holding another run: refused before the kernel starts
        try:
            claim_folder(job.out_dir, RunLog(door=f"notebook:{path.stem}", parameters=expected))
        except DataError as exc:
            raise DataError(f"{exc}; for a notebook: -p out_dir DIR (--output names the executed notebook "
                            "only)") from None  # fmt: skip
    return keep_or_execute(job, force)
