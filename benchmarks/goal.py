"""What every benchmark does with its figure: compare it with the goal, write results/benchmarks/NAME.json, and
exit non-zero when the goal is missed."""

import datetime
import json
import platform
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "results" / "benchmarks"


def check(
    name: str,
    figure: float,
    goal: float,
    *,
    higher_is_better: bool,
    unit: str,
    exit: bool = True,
    out: Path | None = None,
    **details,
) -> bool:
    """Print the verdict, write OUT/name.json (or the file ``out``), and exit 1 when ``figure`` misses ``goal``
    (with ``exit=False`` return whether it was met, so that a benchmark with several goals writes them all first)."""
    met = figure >= goal if higher_is_better else figure <= goal
    path = out or OUT / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "benchmark": name,
        "figure": round(figure, 4),
        "goal": goal,
        "unit": unit,
        "goal_is": "at least" if higher_is_better else "at most",
        "met": met,
        **details,
        "measured": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.python_version()}",
    }
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(
        f"{name}: {figure:.4g} {unit} (goal {'>=' if higher_is_better else '<='} {goal:g}) -> "
        f"{'met' if met else 'MISSED'}; wrote {path}"
    )
    if not met and exit:
        sys.exit(1)
    return met
