"""The Python executor: programs a model writes run in a sandbox, never in the calling process.

    with Sandbox() as box:
        box.run("ans = sum(range(10))").ans        # '45'
        box.run("while True: pass").status         # 'timeout'

Each program runs in a fresh fork of a worker process (olakit.tools.zygote) that has already imported math, numpy
and sympy: the workers are started once and reused (``workers`` of them, one program at a time each), so a program's
overhead is a fork, not an interpreter start. What a program gets:
- **limits** (``Limits``): CPU time, wall-clock time, memory (address space above the worker's own), printed
  characters, bytes written to files; a program past one ends with that status, never a hung or crashed run;
- **no network**: the workers run in a network namespace of their own (``unshare -rn``, where the system allows
  user namespaces: ``Sandbox.isolation`` says) and an audit hook refuses every socket in any case;
- **one writable place**: a temporary folder, its working directory, removed when it ends; no new process;
- **no secret**: the workers' environment is this one's without any ``*_KEY``, ``*_TOKEN``, ``*_SECRET`` or
  ``OLAKIT_*`` variable.

``Execution.status`` is ``ok``, ``error`` (the program raised: its last traceback line), ``timeout``, ``memory``,
``output`` or ``blocked`` (the sandbox refused an operation); each is an observation a tool loop records.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass, field, fields

from olakit.errors import DataError
from olakit.names import SANDBOX_STATUSES
from olakit.tools.errors import ToolError

STATUSES = SANDBOX_STATUSES
"""How a program's run ends (Execution.status): olakit.names.SANDBOX_STATUSES."""


@dataclass(frozen=True)
class Limits:
    """What one program may use. The defaults are PoT's own timeout (5 s, its ``func_timeout``) for CPU time."""

    cpu_s: float = 5.0
    wall_s: float = 10.0
    memory_mb: int = 512
    """Address space above the worker's (which holds numpy and sympy); 0 for no limit."""
    output_chars: int = 20_000
    file_mb: int = 16

    def __post_init__(self):
        for name in ("cpu_s", "wall_s", "output_chars", "file_mb"):
            if not getattr(self, name) > 0:
                raise DataError(f"sandbox limit {name} must be above 0, not {getattr(self, name)!r}")
        if self.memory_mb < 0:
            raise DataError(f"sandbox limit memory_mb must be 0 (none) or above, not {self.memory_mb!r}")


@dataclass
class Execution:
    """One program's run: its ``ans`` (as the presenter rendered it; None when it set none) and printed text."""

    status: str
    ans: object = None
    stdout: str = ""
    error: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0
    program_s: float = 0.0
    """The program's own time (its code alone, in the worker): ``wall_s`` less this is the executor's overhead."""
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def observation(self) -> str:
        """The text a tool loop shows the model: the answer and what was printed, or what went wrong."""
        if self.ok:
            printed = self.stdout.strip()
            shown = f"ans = {self.ans}" if self.ans is not None else "(no ans)"
            return f"{printed}\n{shown}".strip() if printed else shown
        return f"{self.status}: {self.error}"

    def as_dict(self) -> dict:
        return asdict(self)


SECRET_MARKS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")


def worker_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The workers' environment: this one's without secrets or olakit settings, one thread per math library."""
    base = dict(os.environ if base is None else base)
    env = {
        k: v
        for k, v in base.items()
        if not k.upper().startswith("OLAKIT_") and not any(mark in k.upper() for mark in SECRET_MARKS)
    }
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    return env


def _network_namespace() -> bool:
    """Whether ``unshare -rn`` can give a process a network of its own here (user namespaces allowed)."""
    exe = shutil.which("unshare")
    if not exe or sys.platform != "linux":
        return False
    try:
        return subprocess.run([exe, "-rn", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


class _Worker:
    def __init__(self, command: list[str], env: dict[str, str]):
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
            bufsize=1,
        )  # fmt: skip
        line = self.proc.stdout.readline()
        if not line:
            raise DataError(f"the sandbox's worker did not start ({' '.join(command)})")
        self.pid = json.loads(line)["pid"]

    def ask(self, request: dict) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the sandbox's worker ended")
        return json.loads(line)

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class Sandbox:
    """A pool of ``workers`` executor processes; ``run`` is safe to call from several threads at once."""

    limits: Limits = field(default_factory=Limits)
    workers: int = 1
    isolation: tuple[str, ...] = ()
    """The layers on: ``audit-hook``, ``rlimits``, and ``network-namespace`` where the system allows it."""

    def __post_init__(self):
        if self.workers < 1:
            raise DataError(f"a sandbox needs at least 1 worker, not {self.workers}")
        command = [sys.executable, "-m", "olakit.tools.zygote"]
        netns = _network_namespace()
        if netns:
            command = [shutil.which("unshare"), "-rn", *command]
        self.isolation = ("audit-hook", "rlimits", *(["network-namespace"] if netns else []))
        self._command, self._env = command, worker_env()
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()

    def _take(self) -> _Worker:
        with self._lock:
            if self._idle.empty() and len(self._all) < self.workers:
                worker = _Worker(self._command, self._env)
                self._all.append(worker)
                return worker
        return self._idle.get()

    def run(
        self,
        program: str,
        *,
        preamble: str = "",
        scopes: str = "one",
        presenter: str = "builtins:str",
        limits: Limits | None = None,
    ) -> Execution:
        """Run ``program`` (after ``preamble``, outside the limits' audit) and return how it went.

        ``scopes``: ``one`` (a module: one namespace) or ``split`` (top-level names in a dict of their own, as
        ``exec`` inside a function sees them: PoT's harness, where a function the program defines cannot see the
        program's other names). ``presenter`` (``module:function``) renders ``ans`` in the worker (default: str)."""
        if scopes not in ("one", "split"):
            raise DataError(f"scopes must be 'one' or 'split', not {scopes!r}")
        lim = limits or self.limits
        request = {
            "program": program,
            "preamble": preamble,
            "scopes": scopes,
            "presenter": presenter,
            "cpu_s": lim.cpu_s,
            "wall_s": lim.wall_s,
            "memory_bytes": lim.memory_mb << 20,
            "output_chars": lim.output_chars,
            "file_bytes": lim.file_mb << 20,
        }
        worker = self._take()
        try:
            answer = worker.ask(request)
        except (RuntimeError, OSError, ValueError) as exc:  # the worker itself died: replaced on the next run
            with self._lock:
                self._all.remove(worker)
            worker.close()
            return Execution(status="error", error=f"the sandbox's worker failed: {exc}")
        self._idle.put(worker)
        return Execution(**{f.name: answer[f.name] for f in fields(Execution) if f.name in answer})

    def close(self) -> None:
        with self._lock:
            workers, self._all = self._all, []
        for worker in workers:
            worker.close()
        self._idle = queue.Queue()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_SHARED: Sandbox | None = None
_SHARED_LOCK = threading.Lock()


def shared_sandbox() -> Sandbox:
    """The process's one sandbox with the default limits (its workers started on first use, stopped at exit)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            import atexit

            _SHARED = Sandbox(workers=min(4, os.cpu_count() or 1))
            atexit.register(_SHARED.close)
        return _SHARED


def python_tool(program: str) -> str:
    """The ``python`` tool: the program run in the shared sandbox; what it printed and its ``ans``, or ToolError with
    the sandbox's status and message (the loop shows it to the model and records the status)."""
    run = shared_sandbox().run(program)
    if not run.ok:
        raise ToolError(run.observation(), status=run.status)
    return run.observation()
