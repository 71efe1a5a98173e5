"""Issue 40 item 12: the command line starts fast. `olakit --help` and an argument error of each command cost at most
0.25 CPU s (user + system of the whole process, median of 3; importing pandas alone takes 0.5 s here): the parser
imports nothing heavy, each command imports what it needs when it runs. Writes results/benchmarks/cli_start.json
(or --out FILE).
Usage: python benchmarks/bench_cli.py [--out FILE]
"""

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from goal import check

GOAL = 0.25
CASES = {
    "--help": ["--help"],
    "run --bad": ["run", "--bad"],
    "geek --bad": ["geek", "--bad"],
    "review --bad": ["review", "--bad"],
    "compare --bad": ["compare", "--bad"],
    "plan --bad": ["plan", "--bad"],
    "notebook --bad": ["notebook", "--bad"],
    "import --bad": ["import", "--bad"],
}


def cpu_seconds(args: list[str]) -> float:
    """The CPU time (user + system) of one `olakit ARGS` process, from the kernel's accounting of that child."""
    olakit = Path(sys.executable).parent / "olakit"
    proc = subprocess.Popen([str(olakit), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped by wait4
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    medians = {name: statistics.median(cpu_seconds(argv) for _ in range(3)) for name, argv in CASES.items()}
    for name, seconds in medians.items():
        print(f"  olakit {name}: {seconds:.3f} CPU s")
    check("cli_start", max(medians.values()), GOAL, higher_is_better=False, unit="CPU s (slowest case, median of 3)",
          out=args.out, goal_cpu_s=GOAL, median_cpu_s={k: round(v, 4) for k, v in medians.items()})  # fmt: skip


if __name__ == "__main__":
    main()
