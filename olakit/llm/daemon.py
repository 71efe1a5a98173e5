"""The machine's one embedded server: found or started by every olakit process that needs the embedded model, and
stopped once the last of them is gone.

Two live commands at once used to start a llama.cpp server each; on 2 cores the two stalled each other for minutes
and calls timed out. Now the first process that needs the model starts a server process of its own
(``python -m olakit.llm.daemon``, in a session of its own, so it outlives its starter) and records it in
``servers_dir()/<model>.json``; every later process finds it there (after checking that it answers) and uses it.
Each user takes a lease, a file named after its pid in ``<model>.leases/``; the server exits ``GRACE`` seconds after
no living process holds one (a killed process's lease dies with its pid). One lock file serialises finding,
starting and stopping, so a server is never started twice nor stopped under a process that just found it.
``$OLAKIT_EMBEDDED_URL`` names a running server instead.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from olakit.env import environment, user_dir
from olakit.llm.local import SLOTS, LocalServer, ModelError, answers, default_model_path, embedded_spec

GRACE = 30.0
"""Seconds the server stays up after the last lease goes (the next command in a row finds it warm, prompt cache
included)."""
POLL = 1.0
START_WAIT = 300.0
"""The longest a process waits for the server it started to answer (loading the model takes a few seconds)."""


def servers_dir() -> Path:
    """Where the machine's embedded servers are recorded: ``~/.cache/olakit/servers`` (platformdirs)."""
    return user_dir("servers")


@dataclass(frozen=True)
class SharedServer:
    """An embedded server serving this process: the machine's (``pid`` is its process) or, with
    ``$OLAKIT_EMBEDDED_URL``, one named by the environment (``pid`` 0)."""

    base_url: str
    model: str
    pid: int = 0
    slots: int = SLOTS
    log: str = ""
    started: bool = False
    """Whether this process started it."""


@contextlib.contextmanager
def _locked(path: Path):
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _paths(folder: Path, name: str) -> tuple[Path, Path, Path]:
    return folder / f"{name}.lock", folder / f"{name}.json", folder / f"{name}.leases"


def _read(record: Path) -> dict | None:
    try:
        return json.loads(record.read_text())
    except (OSError, ValueError):
        return None


def _live_leases(leases: Path) -> list[int]:
    """The pids holding a lease; a dead process's lease is removed."""
    live = []
    for lease in leases.glob("*") if leases.is_dir() else []:
        try:
            pid = int(lease.name)
        except ValueError:
            continue
        if _alive(pid):
            live.append(pid)
        else:
            lease.unlink(missing_ok=True)
    return live


def _release(lease: Path) -> None:
    lease.unlink(missing_ok=True)


_mine: SharedServer | None = None
_mine_lock = threading.Lock()


def machine_server(
    *,
    n_parallel: int = SLOTS,
    threads: int | None = None,
    verbosity: int | None = None,
    log_path: Path | None = None,
    start: bool = True,
) -> SharedServer | None:
    """The machine's embedded server for the chosen model, started only when none answers (``start=False``: None
    then); this process holds a lease on it until it exits.

    A server this process starts has ``n_parallel`` slots, ``threads`` llama.cpp threads (default: LocalServer's) and
    its llama.cpp log in ``log_path``, else ``$OLAKIT_EMBEDDED_LOG`` (``olakit sweep`` names one in its run folder
    for its kernels), else ``servers_dir()/<model>.log``; a log asked for gets llama.cpp's whole log (verbosity 3),
    the machine's default one errors only, unless ``verbosity`` says otherwise."""
    global _mine
    with _mine_lock:
        if _mine is not None and _alive(_mine.pid):
            return _mine
        spec = embedded_spec()
        folder = servers_dir()
        folder.mkdir(parents=True, exist_ok=True)
        lock, record, leases = _paths(folder, spec["name"])
        with _locked(lock):
            found = _read(record)
            started = False
            if not (found and _alive(found["pid"]) and answers(found["url"])):
                if not start:
                    return None
                path = default_model_path(spec)  # joined and verified here: a missing part is this process's error
                log_path = log_path or environment().embedded_log
                verbosity = (3 if log_path else 0) if verbosity is None else verbosity
                found = _start(path, record, n_parallel, threads, verbosity, log_path or folder / f"{spec['name']}.log")
                started = True
            leases.mkdir(exist_ok=True)
            lease = leases / str(os.getpid())
            lease.touch()
        atexit.register(_release, lease)
        _mine = SharedServer(
            base_url=found["url"],
            model=found["model"],
            pid=found["pid"],
            slots=found["slots"],
            log=found["log"],
            started=started,
        )
        return _mine


def _start(path: Path, record: Path, n_parallel: int, threads: int | None, verbosity: int, log_path: Path) -> dict:
    """Start the server process and wait (holding the lock) until it has recorded itself and answers."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "olakit.llm.daemon", str(path), str(record), "--n-parallel", str(n_parallel)]
    command += ["--verbosity", str(verbosity), "--log", str(log_path), "--grace", str(GRACE)]
    command += ["--threads", str(threads)] if threads else []
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + START_WAIT
    while time.monotonic() < deadline:
        found = _read(record)
        if found and found.get("pid") == proc.pid and answers(found["url"]):
            return found
        if proc.poll() is not None:
            tail = log_path.read_text(errors="replace").strip().splitlines()[-3:]
            raise ModelError(f"the embedded server did not start: {' / '.join(tail) or 'no output'} (log: {log_path})")
        time.sleep(0.2)
    proc.kill()
    raise ModelError(f"the embedded server did not answer within {START_WAIT:.0f} s (log: {log_path})")


def shared_server() -> SharedServer:
    """The embedded server this process calls when no endpoint is configured: the one ``$OLAKIT_EMBEDDED_URL``
    names, else the machine's (found or started)."""
    url = environment().embedded_url
    if url:
        return SharedServer(url.rstrip("/"), embedded_spec()["name"])
    return machine_server()


def serve(
    path: Path, record: Path, n_parallel: int, threads: int | None, verbosity: int, log: str, grace: float = GRACE
) -> None:
    """The server process: serve, record where, and stop GRACE s after the last lease went (or on SIGTERM)."""
    lock, _, leases = _paths(record.parent, record.stem)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with LocalServer(path, n_parallel=n_parallel, threads=threads, verbosity=verbosity) as srv:
        tmp = record.with_name(f".{record.name}.{os.getpid()}")
        info = {"pid": os.getpid(), "url": srv.base_url, "model": srv.model, "slots": n_parallel, "log": log}
        tmp.write_text(json.dumps(info))
        os.replace(tmp, record)
        idle_since = None
        while not stop.wait(POLL):
            with _locked(lock):
                if _live_leases(leases):
                    idle_since = None
                    continue
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since >= grace:
                    stop.set()
                    if (_read(record) or {}).get("pid") == os.getpid():
                        record.unlink(missing_ok=True)  # under the lock: nobody finds a server that is stopping
        with _locked(lock):
            if (_read(record) or {}).get("pid") == os.getpid():
                record.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m olakit.llm.daemon", description=serve.__doc__, allow_abbrev=False)
    p.add_argument("model_path", type=Path)
    p.add_argument("record", type=Path)
    p.add_argument("--n-parallel", type=int, default=SLOTS)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--verbosity", type=int, default=0)
    p.add_argument("--log", default="")
    p.add_argument("--grace", type=float, default=GRACE)
    a = p.parse_args(argv)
    serve(a.model_path, a.record, a.n_parallel, a.threads, a.verbosity, a.log, a.grace)


if __name__ == "__main__":
    main()
