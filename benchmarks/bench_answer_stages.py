"""Issue 16's goal, on the embedded model: `notebooks/answer_stages.ipynb` (10 AQuA test questions x 5 templates,
zero-shot, greedy) run through `olakit sweep`, answered with one stage and with two. Goal: unparsed answers with two
stages <= 5% of the slice. Writes results/benchmarks/answer_stages_<MODEL>.json with accuracy and unparsed rate of
both settings, answers cut off at the limit, and the second stage's extra calls and tokens, per template and overall.
Answers come from the shared answer cache when it holds them (same figures; uncached, the 1.5B slice takes about
25 min here, the 0.5B about 5).
Usage: python benchmarks/bench_answer_stages.py [MODEL] [MAX_TOKENS] [N_QUESTIONS]   (default 1.5b 512 10; the 1.5B
needs `make model-1.5b`)
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
from goal import check

model = sys.argv[1] if len(sys.argv) > 1 else "1.5b"
max_tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 512
n_questions = int(sys.argv[3]) if len(sys.argv) > 3 else 10
ROOT = Path(__file__).resolve().parent.parent

with tempfile.TemporaryDirectory() as tmp:
    sweep = Path(tmp) / "answer_stages.yaml"
    sweep.write_text(
        "run_id: answer_stages\nparallel: 1\nnotebooks:\n"
        f"  - notebook: {ROOT / 'notebooks' / 'answer_stages.ipynb'}\n"
        f"    parameters: {{max_tokens: {max_tokens}, n_questions: {n_questions}}}\n"
    )
    olakit = str(Path(sys.executable).with_name("olakit"))
    cmd = [olakit, "sweep", str(sweep), "--runs-dir", f"{tmp}/runs", "--results-dir", f"{tmp}/results"]
    subprocess.run(cmd, check=True, env={**os.environ, "OLAKIT_EMBEDDED_MODEL": model})
    table = pd.read_csv(Path(tmp) / "results" / "answer_stages" / "answer_stages" / "tables" / "answer_stages.csv")
total = table[table["template"] == "all"].iloc[0]
per_template = table[table["template"] != "all"]
check(
    f"answer_stages_{model}",
    float(total["unparsed_rate_2"]),
    0.05,
    higher_is_better=False,
    unit="unparsed answers, two stages (share of the slice)",
    model=model,
    slice=f"{n_questions} AQuA test questions x {len(per_template)} templates, zero-shot",
    max_tokens=max_tokens,
    answers=int(total["n"]),
    unparsed_rate_1=round(float(total["unparsed_rate_1"]), 4),
    accuracy_1=round(float(total["accuracy_1"]), 4),
    accuracy_2=round(float(total["accuracy_2"]), 4),
    cut_off_1=int(total["cut_off_1"]),
    second_calls=int(total["second_calls"]),
    second_tokens=int(total["second_tokens"]),
    per_template={
        r["template"]: {
            k: round(float(r[k]), 4)
            for k in ("accuracy_1", "unparsed_rate_1", "accuracy_2", "unparsed_rate_2", "second_calls")
        }
        for _, r in per_template.iterrows()
    },
)
