"""Issue 42's goals for the tools library, measured in one run on PoT's recorded GSM8K programs
(../shared/data/external/pot):
- a calculator call at most 1 ms (median over expressions of the forms models write);
- an executed program's overhead at most 50 ms, median over the 1,318 programs: the caller's time for ``run``
  less the program's own time in the worker (``Execution.program_s``), each program one call;
- the whole recorded set executed, as PoT's harness runs it, in at most 60 s (``olakit.tools.pot.replay``, the
  sandbox's workers one per core).
Writes results/benchmarks/tools_calculator.json, tools_overhead.json and tools_pot_gsm8k.json (or into --out-dir).
Usage: python benchmarks/bench_tools.py [--out-dir DIR]
"""

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from goal import check

from olakit.data.loaders import resolve_data_dir
from olakit.tools.calculator import calculate
from olakit.tools.pot import LIMITS, PREAMBLE, replay
from olakit.tools.sandbox import Limits, Sandbox

EXPRESSIONS = [
    "16 - 3 - 4", "(16 - 3 - 4) * 2", "40,000 * 3%", "$300 / 4", "2^10 - 1", "0.1 + 0.2", "1/3 + 1/6",
    "(12.5 + 3/4) * 8 - 17 % 5", "sqrt(2) * 3", "factorial(10) / (factorial(3) * factorial(7))", "round(2/3, 4)",
    "1200 * (1 + 0.05)^3", "24 - 6 =", "comb(52, 5)", "log(1000, 10)",
]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=None)
    args = parser.parse_args()
    out = (lambda name: args.out_dir / f"{name}.json") if args.out_dir else (lambda name: None)

    per_call = []
    for text in EXPRESSIONS:
        calculate(text)  # parsed once: the evaluator is made on first use
        t0 = time.perf_counter()
        for _ in range(200):
            calculate(text)
        per_call.append((time.perf_counter() - t0) / 200 * 1000)
    calc_ms = statistics.median(per_call)
    print(f"  calculator: median {calc_ms:.3f} ms a call, slowest expression {max(per_call):.3f} ms")

    path = resolve_data_dir() / "external" / "pot" / "outputs" / "gsm8K_s0_e-1_11_17_10_20.jsonl"
    programs = [r["generated"][0] for r in map(json.loads, path.read_text().splitlines()) if "question" in r]
    workers = os.cpu_count() or 1
    limits = Limits(**LIMITS)
    with Sandbox(workers=workers) as box:
        box.run("ans = 1")  # the first worker started
        overheads, statuses = [], {}
        for program in programs:
            t0 = time.perf_counter()
            run = box.run(program, preamble=PREAMBLE, scopes="split", presenter="olakit.tools.pot:number",
                          limits=limits)  # fmt: skip
            overheads.append((time.perf_counter() - t0 - run.program_s) * 1000)
            statuses[run.status] = statuses.get(run.status, 0) + 1
        overhead_ms = statistics.median(overheads)
        print(f"  overhead: median {overhead_ms:.1f} ms a program over {len(programs)} ({statuses})")
        t0 = time.perf_counter()
        table = replay(path, box)
        whole_s = time.perf_counter() - t0
    same = int(table["same"].sum())
    print(f"  replay: {len(table)} programs in {whole_s:.1f} s on {workers} workers, {same} give the recorded answer")

    met = [
        check("tools_calculator", calc_ms, 1.0, higher_is_better=False, unit="ms a call (median)", exit=False,
              out=out("tools_calculator"), per_expression_ms=dict(zip(EXPRESSIONS, map(lambda x: round(x, 4),
                                                                                       per_call)))),
        check("tools_overhead", overhead_ms, 50.0, higher_is_better=False, unit="ms a program (median)", exit=False,
              out=out("tools_overhead"), programs=len(programs), statuses=statuses,
              p90_ms=round(statistics.quantiles(overheads, n=10)[-1], 3)),
        check("tools_pot_gsm8k", whole_s, 60.0, higher_is_better=False, unit="s for the recorded set", exit=False,
              out=out("tools_pot_gsm8k"), programs=len(table), workers=workers, same_as_recorded=same,
              differing=table.loc[~table["same"], ["i", "recorded", "executed"]].astype(str).to_dict("records")),
    ]  # fmt: skip
    if not all(met):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
