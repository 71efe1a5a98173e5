"""`make paper` from a warm cache, as a user types it a second time: the Makefile's steps (the data check,
compileall, `olakit sweep sweeps/paper.yaml`), each a new process, after the first run's embedded server has stopped
(it stops 30 s after its last user). A result whose inputs are unchanged is kept, not made again (issue 39), so a warm
run executes no notebook: goal <= 3 s for the whole command, the median of three runs (it was 19.7 s when every
notebook ran again). Then one notebook edited (a copy of reproduce_olagpt.ipynb the sweep file names): only that one
runs again (goal: 1 notebook executed), and its seconds. Then the note_strategy notebook alone (Table 3 with every
statistic, on the recorded outputs), through papermill as the sweep runs it: goal <= 10 s. And the first run, from
empty caches (answers, embeddings, indexes): goal <= 4 min (240 s).
Usage: python benchmarks/bench_paper.py
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from goal import check

from olakit.llm.daemon import _alive, servers_dir
from olakit.notebook.jobs import Job, execute

ROOT = Path(__file__).resolve().parent.parent
WARM_RUNS = 3
BIN = Path(sys.executable).parent


def wait_for_no_server(limit: float = 120.0) -> float:
    """Seconds until no embedded server runs on this machine (the first run's stops 30 s after its last user)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        records = [json.loads(p.read_text()) for p in servers_dir().glob("*.json")]
        if not any(_alive(r.get("pid", 0)) for r in records):
            return round(time.perf_counter() - t0, 1)
        time.sleep(1)
    sys.exit(f"an embedded server still runs after {limit:.0f} s")


for var in ("OLAKIT_BASE_URL", "OLAKIT_EMBEDDED_URL", "OLAKIT_CACHE_URL"):
    os.environ.pop(var, None)
os.chdir(ROOT)


def make_paper(sweep_file: Path, run_id: str, folder: Path) -> tuple[dict, float]:
    """The steps of `make paper` (Makefile), each a new process as make starts it: (the sweep's index, the seconds
    of all three)."""
    t0 = time.perf_counter()
    steps = [
        [str(BIN / "python"), "-c", "from olakit.data.loaders import resolve_data_dir as r; print('data:', r())"],
        [str(BIN / "python"), "-m", "compileall", "-q", "olakit"],
        [str(BIN / "olakit"), "sweep", str(sweep_file), "--run-id", run_id, "--runs-dir", str(folder / "runs"),
         "--results-dir", str(folder / "results"), "--figures-dir", str(folder / "figures")],
    ]  # fmt: skip
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"{' '.join(step[:3])} failed: {done.stderr[-2000:]}")
    wall = time.perf_counter() - t0
    return json.loads((folder / "runs" / run_id / "index.json").read_text()), wall


def made(index: dict) -> list[str]:
    return [r["name"] for r in index["runs"] if r["status"] != "kept"]


with tempfile.TemporaryDirectory() as tmp:
    folder = Path(tmp)
    os.environ["OLAKIT_CACHE_DIR"] = str(folder / "cache")
    os.environ["OLAKIT_EMBED_CACHE_DIR"] = str(folder / "embeddings")
    os.environ["OLAKIT_INDEX_DIR"] = str(folder / "indexes")  # retrieval indexes and the recorded records, kept
    edited = folder / "reproduce_olagpt.ipynb"  # the notebook this benchmark edits: a copy, the sweep names it
    shutil.copy(ROOT / "notebooks" / "reproduce_olagpt.ipynb", edited)
    sweep_file = folder / "paper.yaml"
    sweep_file.write_text((ROOT / "sweeps" / "paper.yaml").read_text().replace(
        "notebook: reproduce_olagpt\n", f"notebook: {edited}\n"))  # fmt: skip
    cold, cold_wall = make_paper(sweep_file, "paper", folder)
    if any(r["status"] != "ok" for r in cold["runs"]):
        sys.exit(f"runs failed: {[(r['name'], r['error']) for r in cold['runs'] if r['status'] != 'ok']}")
    waited = wait_for_no_server()  # a second `make paper` a minute later finds no server running
    walls, warm = [], None
    for _ in range(WARM_RUNS):
        wait_for_no_server()
        warm, one = make_paper(sweep_file, "paper", folder)
        walls.append(round(one, 2))
        if made(warm):
            sys.exit(f"a warm make paper made {made(warm)} again")
    wall = sorted(walls)[len(walls) // 2]
    notebook = json.loads(edited.read_text())
    notebook["cells"][1]["source"].append("\n\n(Edited by benchmarks/bench_paper.py.)")
    edited.write_text(json.dumps(notebook, indent=1))
    after, after_wall = make_paper(sweep_file, "paper", folder)
    alone = execute(Job("note_strategy", "notebooks/note_strategy.ipynb",
                        {"source": "recorded", "out_dir": str(folder / "ns")}, str(folder / "ns.ipynb")))  # fmt: skip
    if alone.status != "ok":
        sys.exit(f"note_strategy failed: {alone.error}")
details = {
    "what": "make paper's steps (data check, compileall, olakit sweep), each a new process, the embedded server not "
    "running: a second `make paper`",
    "command_s_each": walls,
    "kept_when_warm": len(warm["runs"]) - len(made(warm)),
    "notebooks": len(warm["runs"]),
    "server_stopped_after_s": waited,
    "cold_s": round(cold_wall, 1),
    "cold_calls": cold["calls"],
    "cold_runs_s": {r["name"]: r["wall_s"] for r in cold["runs"]},
    "one_edited_made": made(after),
    "one_edited_s": round(after_wall, 2),
    "note_strategy_alone_s": alone.wall_s,
}
print(
    f"cold {cold_wall:.1f} s; warm: {walls} s (median {wall:.2f} s, {details['kept_when_warm']} of "
    f"{len(warm['runs'])} kept); one notebook edited: {made(after)} made in {after_wall:.1f} s",
    flush=True,
)
met = check("paper_cold", cold_wall, 240, higher_is_better=False, unit="s", exit=False, **details)  # issue 53
met &= check("paper_warm", wall, 3, higher_is_better=False, unit="s", exit=False, **details)
met &= check("paper_one_edited", len(made(after)), 1, higher_is_better=False, unit="notebooks executed", exit=False,
             **details)  # fmt: skip
met &= check("note_strategy_recorded", alone.wall_s, 10, higher_is_better=False, unit="s", exit=False, **details)
sys.exit(0 if met else 1)
