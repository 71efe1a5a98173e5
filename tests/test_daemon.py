"""The machine's one embedded server (olakit.llm.daemon): found, not started twice, by every olakit process on
the machine; stopped once the last of them is gone, a killed one included. Real processes, the real model."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.real_model

CHILD = """
import sys, time
import olakit.llm.daemon as d
d.GRACE = 2.0
from olakit.llm import LLM, Request
r = LLM(progress=False).batch([Request.make("Say hi " + sys.argv[1], max_tokens=4)])[0]
s = d.machine_server()
print(s.pid, s.base_url, s.started, r.ok, flush=True)
time.sleep(float(sys.argv[2]))
"""


def child(env, tag: str, hold: float) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, tag, str(hold)], env=env, stdout=subprocess.PIPE, text=True, cwd=os.getcwd()
    )


def gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def test_two_processes_at_once_share_one_server_which_stops_after_the_last(tmp_path, own_machine):
    """... and the server computes on the threads OLAKIT_EMBEDDED_THREADS says, else on every core
    (llama.cpp's whole log, asked for by OLAKIT_EMBEDDED_LOG, says how many)."""
    env = {**own_machine, "OLAKIT_EMBEDDED_THREADS": "1", "OLAKIT_EMBEDDED_LOG": str(tmp_path / "one.log")}
    procs = [child(env, tag, 3) for tag in ("a", "b")]
    lines = [p.communicate(timeout=180)[0].split() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], lines
    (pid_a, url_a, started_a, ok_a), (pid_b, url_b, started_b, ok_b) = lines
    assert pid_a == pid_b and url_a == url_b  # one server for both
    assert sorted([started_a, started_b]) == ["False", "True"]  # started once, found once
    assert ok_a == ok_b == "True"
    record = tmp_path / "xdg" / "olakit" / "servers"
    (info_file,) = record.glob("*.json")
    assert json.loads(info_file.read_text())["pid"] == int(pid_a)
    assert gone(int(pid_a), within=30)  # the last user left: it stops after its grace (2 s)
    assert not list(record.glob("*.json"))  # and says so: the next process starts a fresh one

    assert "llama threadpool init, n_threads = 1\n" in (tmp_path / "one.log").read_text()

    env = {k: v for k, v in env.items() if k != "OLAKIT_EMBEDDED_THREADS"} | {
        "OLAKIT_EMBEDDED_LOG": str(tmp_path / "all.log")
    }
    again = child(env, "c", 0)
    pid_c, _, started_c, ok_c = again.communicate(timeout=180)[0].split()
    assert started_c == "True" and ok_c == "True" and pid_c != pid_a
    assert gone(int(pid_c), within=30)
    cores = os.cpu_count()
    assert f"llama threadpool init, n_threads = {cores}\n" in (tmp_path / "all.log").read_text()


def test_a_killed_user_does_not_keep_the_server_up(own_machine):
    env = own_machine
    holder = child(env, "k", 600)
    pid = int(holder.stdout.readline().split()[0])
    holder.send_signal(signal.SIGKILL)  # no atexit: its lease stays behind, with a dead pid
    holder.wait(timeout=10)
    assert gone(pid, within=30)
