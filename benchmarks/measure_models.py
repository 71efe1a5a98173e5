"""The two embedded models side by side on the same AQuA questions (a measurement for the README, no goal): ST's
step-by-step prompt, zero-shot, greedy, max_tokens 400, one stage and two stages of answer extraction. Reports
accuracy, unparsed answers, answers cut off at the limit, and the server's own generation speed (tokens/s per slot,
from its /metrics) and the aggregate (completion tokens over the wall time, 4 slots).
Writes results/benchmarks/models.json. Usage: python benchmarks/measure_models.py [N_QUESTIONS] [MODELS]
(default 30 questions, models 0.5b,1.5b; the 1.5B needs `make model-1.5b`).
"""

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from olakit.llm import LLM, Endpoint
from olakit.llm.local import MODELS, LocalServer, default_model_path, server_metrics
from olakit.olagpt.config import OlaGPTConfig
from olakit.olagpt.run import run

n_questions = int(sys.argv[1]) if len(sys.argv) > 1 else 30
names = sys.argv[2].split(",") if len(sys.argv) > 2 else ["0.5b", "1.5b"]
OUT = Path(__file__).resolve().parent.parent / "results" / "benchmarks" / "models.json"


def measure(name: str) -> dict:
    spec = MODELS[name]
    out = {"model": spec["name"], "questions": n_questions}
    with LocalServer(default_model_path(spec)) as srv, tempfile.TemporaryDirectory() as cache:
        endpoint = Endpoint(srv.base_url, spec["name"], local=True, identity=f"measure|{spec['sha256'][:16]}")
        with LLM(endpoint, cache_dir=cache, progress=False) as llm:
            for stages in (1, 2):
                cfg = OlaGPTConfig(
                    n_questions=n_questions,
                    templates=["ST"],
                    strategies=["zero-shot"],
                    baselines=(),
                    votes=("regex_vote",),
                    max_tokens=400,
                    answer_stages=stages,
                )
                before = server_metrics(srv.base_url)
                t0 = time.perf_counter()
                rec = run(cfg, llm=llm).records
                wall = time.perf_counter() - t0
                after = server_metrics(srv.base_url)
                gen = after["tokens_predicted_total"] - before.get("tokens_predicted_total", 0)
                secs = after["tokens_predicted_seconds_total"] - before.get("tokens_predicted_seconds_total", 0)
                st = rec[rec["template"] == "ST"]
                out[f"stages_{stages}"] = {
                    "correct": int(st["correct"].sum()),
                    "accuracy": round(float(st["correct"].mean()), 4),
                    "unparsed": int(st["extracted"].isna().sum()),
                    "cut_off": int((st["finish_reason"] == "length").sum()),
                    "from_stage_2": int((st["answer_stage"] == 2).sum()),
                    "wall_s": round(wall, 1),
                    "generated_tokens": int(gen),
                    "tokens_per_s_per_slot": round(gen / secs, 2) if secs else None,
                    "tokens_per_s_aggregate": round(gen / wall, 2) if wall else None,
                }
                print(name, stages, out[f"stages_{stages}"], flush=True)
    return out


os.environ.pop("OLAKIT_BASE_URL", None)
results = {name: measure(name) for name in names}
OUT.parent.mkdir(parents=True, exist_ok=True)
previous = json.loads(OUT.read_text()) if OUT.is_file() else {}
OUT.write_text(json.dumps({**previous, **results}, indent=1) + "\n")
print(f"wrote {OUT}")
