"""No oversubscription: the embedded server's generation speed during a `make paper`-like sweep against its speed
with the same live notebooks alone, side by side in one run, each from an empty answer cache (so every live call is
generated) with its own freshly started server.

"Alone" runs only the sweep's live notebooks; "sweep" runs the whole file (the CPU-heavy analyses of the recorded
outputs and the live notebooks) as `olakit sweep` schedules it (olakit.notebook.sweep.thread_rules). The figure is
the server's own generated tokens per second per slot (its /metrics: tokens predicted / seconds spent predicting),
sweep / alone. Goal: >= 0.8.
Usage: python benchmarks/bench_oversubscription.py [SWEEP_FILE]   (default: sweeps/paper.yaml)
"""

import os
import sys
import tempfile
from pathlib import Path

import yaml
from goal import check

from olakit.notebook.sweep import expand, is_live, load_spec, run_sweep

ROOT = Path(__file__).resolve().parent.parent
sweep_file = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "sweeps" / "paper.yaml"


def live_only(spec: dict, folder: Path) -> Path:
    """The sweep file with only the entries whose runs call the model."""
    keep = [e for e in spec["notebooks"] if any(is_live(j) for j in expand({"notebooks": [e]}, "x", folder, folder))]
    path = folder / "live-only.yaml"
    path.write_text(yaml.safe_dump({**spec, "notebooks": keep}))
    return path


def measure(path: Path, folder: Path, name: str) -> dict:
    os.environ["OLAKIT_CACHE_DIR"] = str(folder / f"cache-{name}")  # empty: every live call is generated
    index = run_sweep(path, run_id=name, runs_dir=folder / "runs", results_dir=folder / "results")
    failed = [r["name"] for r in index["runs"] if r["status"] != "ok"]
    if failed or not index["server"]:
        sys.exit(f"{name}: runs failed {failed} or no server figures")
    print(f"{name}: {len(index['runs'])} notebooks in {index['wall_s']} s; server {index['server']}", flush=True)
    return {"notebooks": len(index["runs"]), "wall_s": index["wall_s"], **index["server"]}


for var in ("OLAKIT_BASE_URL", "OLAKIT_EMBEDDED_URL"):
    os.environ.pop(var, None)  # the sweeps start the embedded model themselves
os.chdir(ROOT)
spec = load_spec(sweep_file)
with tempfile.TemporaryDirectory() as tmp:
    folder = Path(tmp)
    alone = measure(live_only(spec, folder), folder, "alone")
    sweep = measure(sweep_file, folder, "sweep")
check(
    "oversubscription",
    sweep["generated_tokens_per_s"] / alone["generated_tokens_per_s"],
    0.8,
    higher_is_better=True,
    unit="x the server's generation speed with the live notebooks alone",
    sweep_file=str(sweep_file.relative_to(ROOT) if sweep_file.is_relative_to(ROOT) else sweep_file),
    cores=os.cpu_count(),
    alone=alone,
    sweep=sweep,
)
