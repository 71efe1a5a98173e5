"""The executor's worker process (``python -m olakit.tools.zygote``, started by olakit.tools.sandbox): it imports the
libraries programs use once, then serves one program at a time, each in a fresh fork of itself, so a program pays
no start-up and no program sees another's state.

A request and its answer are one JSON line each on stdin and stdout. Each program's child:
- runs in a new session in its own temporary folder (its working directory, the one place it may write, removed
  after it ends), with the worker's scrubbed environment (no key, no olakit setting);
- has CPU-time, address-space, file-size and open-file limits (``resource``), and is killed at its wall-clock limit;
- is refused, by an audit hook (PEP 578) installed before its code runs: any socket, a new process (fork, exec,
  spawn, subprocess, system), ctypes, signals to other processes and any write, rename, removal or mode change
  outside its folder (the worker itself runs in a network namespace of its own where ``unshare`` allows one);
- prints into a buffer capped at the output limit (its file descriptors 1 and 2 go nowhere);
- sends back ``ans`` (the program's variable, as the request's presenter renders it) and its printed text.

The audit hook stops Python-level code, which is what a model writes; it is not a container. olakit.tools.sandbox
says which layers are on.
"""

from __future__ import annotations

import io
import json
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback

PRELOAD = ("math", "fractions", "decimal", "statistics", "itertools", "collections", "datetime", "numpy", "sympy")
"""Imported once by the worker, before any fork: a program's ``import sympy`` then costs nothing."""

_BLOCKED_EVENTS = (
    "socket.",
    "os.fork",
    "os.forkpty",
    "os.posix_spawn",
    "os.exec",
    "os.spawn",
    "os.system",
    "subprocess.Popen",
    "os.kill",
    "os.killpg",
    "signal.pthread_kill",
    "ctypes.",
    "sys.addaudithook",
    "pty.spawn",
    "webbrowser.open",
    "urllib.Request",
    "http.client.connect",
    "ftplib.connect",
    "smtplib.connect",
)
_PATH_EVENTS = {  # event -> the positions of its path arguments that write
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.rename": (0, 1),
    "os.replace": (0, 1),
    "os.link": (0, 1),
    "os.symlink": (1,),
    "os.truncate": (0,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.mkdir": (0,),
    "os.utime": (0,),
    "shutil.rmtree": (0,),
    "shutil.move": (0, 1),
    "shutil.copyfile": (1,),
    "shutil.copytree": (1,),
}


class Blocked(PermissionError):
    """What the sandbox refused (a PermissionError, so a program's own ``except OSError`` may catch it)."""


class OutputLimit(Exception):
    pass


class _Capped(io.TextIOBase):
    """A program's stdout and stderr: text kept up to ``limit`` characters, then OutputLimit."""

    def __init__(self, limit: int):
        self.parts: list[str] = []
        self.size, self.limit = 0, limit

    def write(self, s):
        self.size += len(s)
        if self.size > self.limit:
            raise OutputLimit(f"printed more than {self.limit} characters")
        self.parts.append(s)
        return len(s)

    def writable(self):
        return True

    def text(self) -> str:
        return "".join(self.parts)


def _guard(folder: str):
    """The audit hook of a program's child: refuses the network, new processes, ctypes and writes outside
    ``folder``."""
    root = os.path.realpath(folder)

    def inside(path) -> bool:
        if isinstance(path, int):  # a file descriptor already open
            return True
        try:
            path = os.fsdecode(path)
        except TypeError:
            return True
        full = os.path.realpath(os.path.join(root, path))
        return full == root or full.startswith(root + os.sep) or full == os.devnull

    def hook(event: str, args):
        if event.startswith(_BLOCKED_EVENTS):
            what = "the network" if event.startswith(("socket.", "urllib", "http", "ftplib", "smtplib")) else event
            raise Blocked(f"sandbox: {what} is not allowed ({event})")
        if event == "open":
            path, mode = args[0], args[1]
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(args[2], int) and args[2] & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND)
            )
            if writes and not inside(path):
                raise Blocked(f"sandbox: writing {os.fsdecode(path)!r} is not allowed: only the program's folder")
        elif event in _PATH_EVENTS:
            for i in _PATH_EVENTS[event]:
                if i < len(args) and not inside(args[i]):
                    raise Blocked(f"sandbox: {event} on {args[i]!r} is not allowed: only the program's folder")

    return hook


def _present(value, presenter: str):
    module, _, name = presenter.partition(":")
    __import__(module)
    return getattr(sys.modules[module], name)(value)


def _child(req: dict, folder: str, out_fd: int) -> None:
    """In the fork: limits, the guard, the program, then one JSON answer on ``out_fd``; never returns."""
    answer: dict = {"status": "ok"}
    out = _Capped(int(req["output_chars"]))
    try:
        os.setsid()
        os.chdir(folder)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        cpu = max(1, int(req["cpu_s"] + 0.999))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        if req.get("memory_bytes"):
            resource.setrlimit(resource.RLIMIT_AS, (req["base_vm"] + int(req["memory_bytes"]),) * 2)
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(req["file_bytes"]),) * 2)
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        namespace = {"__name__": "__main__", "__builtins__": __builtins__}
        if req.get("preamble"):
            exec(compile(req["preamble"], "<preamble>", "exec"), namespace)
        sys.stdout = sys.stderr = out
        sys.addaudithook(_guard(folder))
        code = compile(req["program"], "<program>", "exec")
        started = time.perf_counter()
        if req.get("scopes") == "split":  # as exec() inside a function: top-level names in a dict of their own
            local: dict = {}
            exec(code, namespace, local)
        else:
            local = namespace
            exec(code, namespace)
        answer["program_s"] = round(time.perf_counter() - started, 6)
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        if local.get("ans") is not None:
            answer["ans"] = _present(local["ans"], req["presenter"])
        else:
            answer["ans"] = None
            answer["note"] = "the program set ans to None" if "ans" in local else "the program set no ans"
    except OutputLimit as exc:
        answer = {"status": "output", "error": f"output limit: {exc}"}
    except MemoryError:
        answer = {"status": "memory", "error": f"memory limit: over {req.get('memory_bytes', 0) >> 20} MiB"}
    except Blocked as exc:
        answer = {"status": "blocked", "error": str(exc)}
    except BaseException as exc:  # the program's own error, as its last traceback line
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
        if isinstance(exc, SystemExit):
            tb = f"SystemExit: {exc.code}"
        answer = {"status": "error", "error": tb}
    answer["stdout"] = out.text()[: int(req["output_chars"])]
    try:
        data = json.dumps(answer, default=str).encode()
    except Exception as exc:  # noqa: BLE001
        data = json.dumps({"status": "error", "error": f"unreadable answer: {exc}", "stdout": ""}).encode()
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(out_fd, view) :]
    finally:
        os._exit(0)


def _vm_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _run(req: dict) -> dict:
    try:  # the presenter's module imported here, before the fork: each program's child finds it loaded
        __import__(req["presenter"].partition(":")[0])
    except Exception:  # noqa: BLE001  (the child reports it)
        pass
    folder = tempfile.mkdtemp(prefix="olakit-program-")
    read_fd, write_fd = os.pipe()
    start, cpu0 = time.perf_counter(), os.times()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(req, folder, write_fd)
    os.close(write_fd)
    chunks, deadline, status = [], start + float(req["wall_s"]), None
    try:
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                status = "timeout"
                break
            ready, _, _ = select.select([read_fd], [], [], left)
            if ready:
                chunk = os.read(read_fd, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(read_fd)
        if status == "timeout":
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                os.kill(pid, signal.SIGKILL)
        _, code = os.waitpid(pid, 0)
        shutil.rmtree(folder, ignore_errors=True)
    wall = time.perf_counter() - start
    cpu1 = os.times()
    cpu = (cpu1.children_user - cpu0.children_user) + (cpu1.children_system - cpu0.children_system)
    if status == "timeout":
        answer = {"status": "timeout", "error": f"wall-clock limit: over {req['wall_s']} s", "stdout": ""}
    elif chunks:
        answer = json.loads(b"".join(chunks))
    elif os.WIFSIGNALED(code) and os.WTERMSIG(code) in (signal.SIGXCPU, signal.SIGKILL):
        answer = {"status": "timeout", "error": f"CPU-time limit: over {req['cpu_s']} s", "stdout": ""}
    elif os.WIFSIGNALED(code):
        answer = {"status": "error", "error": f"killed by signal {os.WTERMSIG(code)}", "stdout": ""}
    else:  # the fork left before it answered: the program ended the process itself (os._exit, os.abort caught)
        status = os.WEXITSTATUS(code) if os.WIFEXITED(code) else code
        answer = {"status": "error", "error": f"the program ended the process (exit status {status}) before it "
                  "answered", "stdout": ""}  # fmt: skip
    answer["wall_s"], answer["cpu_s"] = round(wall, 6), round(cpu, 6)
    return answer


def main() -> None:
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    sys.stdout.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        req = json.loads(line)
        req["base_vm"] = _vm_bytes()  # the fork's start: its memory limit is on top of what it inherits
        answer = _run(req)
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
