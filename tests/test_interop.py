"""Runs made by other tools, imported (olakit.data.imported): the tests make real Inspect AI and lm-eval-harness logs by
running those tools (their own command lines) against the embedded model on four AQuA questions, offline, then import
them and check each record against the answer and the verdict the tool itself logged, read here with the tool's own
reader (Inspect) or straight from its sample lines (lm-eval)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from olakit.data.imported import ImportSpec, import_runs
from olakit.data.loaders import load_questions

pytestmark = pytest.mark.real_model
BIN = Path(sys.executable).parent
N = 4

TASK = """
import json
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import choice
from inspect_ai.solver import multiple_choice


def tiny(shuffle: bool) -> Task:
    rows = json.load(open({rows!r}))
    samples = [Sample(input=r["question"], choices=r["options"], target=r["gold"], id=f"item{{i}}")
               for i, r in enumerate(rows)]
    dataset = MemoryDataset(samples)
    if shuffle:
        dataset.shuffle_choices(seed=7)
    return Task(dataset=dataset, solver=multiple_choice(), scorer=choice())


@task
def aqua_tiny():
    return tiny(shuffle=False)


@task
def aqua_tiny_shuffled():
    return tiny(shuffle=True)
"""

LM_TASK = """task: aqua_tiny
dataset_path: json
dataset_kwargs:
  data_files:
    test: {rows}
test_split: test
output_type: generate_until
doc_to_text: "{{{{question}}}}\\n{{% for o in options %}}{{{{ 'ABCDE'[loop.index0] }}}}) {{{{ o }}}}\\n{{% endfor %}}\\
  Answer with the letter of the right option."
doc_to_target: gold
generation_kwargs:
  until: ["\\n\\n"]
  max_gen_toks: 12
  do_sample: false
  temperature: 0
filter_list:
  - name: letter
    filter:
      - function: regex
        regex_pattern: "\\\\b([A-E])\\\\b"
      - function: take_first
  - name: last-letter
    filter:
      - function: regex
        regex_pattern: "([A-E])[^A-E]*$"
      - function: take_first
metric_list:
  - metric: exact_match
"""


@pytest.fixture(scope="module")
def made(tmp_path_factory, data_dir):
    """Inspect (choices as given, and shuffled) and lm-eval logs of the embedded model on AQuA's first questions."""
    from olakit.llm.daemon import shared_server

    server = shared_server()
    tmp = tmp_path_factory.mktemp("interop")
    questions = load_questions("aqua", "test", str(data_dir))[:N]
    # the tools are given the questions' text and options, not olakit's ids: the import matches them by content
    rows = [{"question": q.text, "options": list(q.options.values()), "gold": q.gold} for q in questions]
    (tmp / "rows.json").write_text(json.dumps(rows))
    (tmp / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp / "aqua_task.py").write_text(TASK.format(rows=str(tmp / "rows.json")))
    (tmp / "lm").mkdir()
    (tmp / "lm" / "aqua_tiny.yaml").write_text(LM_TASK.format(rows=tmp / "rows.jsonl"))
    env = {**os.environ, "OLAKIT_API_KEY": "none", "OLAKIT_BASE_URL": server.base_url, "HF_DATASETS_OFFLINE": "1",
           "HF_HUB_OFFLINE": "1", "INSPECT_LOG_DIR": str(tmp / "logs"), "NO_COLOR": "1"}  # fmt: skip
    model = f"openai-api/olakit/{server.model}"
    task = tmp / "aqua_task.py"
    # the three runs at once, as a person runs tools side by side: the embedded server answers them together (its
    # slots), and one `inspect eval` runs both of Inspect's tasks (--max-tasks)
    inspect = subprocess.Popen(
        [BIN / "inspect", "eval", f"{task}@aqua_tiny", f"{task}@aqua_tiny_shuffled", "--max-tasks", "2", "--model",
         model, "--max-tokens", "24", "--temperature", "0", "--display", "none", "--log-dir", str(tmp / "logs")],
        env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    args = f"model={server.model},base_url={server.base_url}/chat/completions,num_concurrent=2,tokenized_requests=False"
    lm_eval = subprocess.Popen(
        [BIN / "lm_eval", "--model", "local-chat-completions", "--model_args", args, "--tasks", "aqua_tiny",
         "--include_path", str(tmp / "lm"), "--apply_chat_template", "--log_samples",
         "--output_path", str(tmp / "out")],
        env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    for name, proc in (("inspect eval", inspect), ("lm_eval", lm_eval)):
        out, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"{name} failed:\n{out[-3000:]}"
    from inspect_ai.log import read_eval_log

    by_task = {read_eval_log(str(p), header_only=True).eval.task: p for p in (tmp / "logs").glob("*.eval")}
    logs = (by_task["aqua_tiny"], by_task["aqua_tiny_shuffled"])
    samples = next((tmp / "out").rglob("samples_aqua_tiny_*.jsonl"))
    return {"questions": questions, "inspect": logs, "lm_eval": samples, "tmp": tmp}


def test_inspect_logs_import_with_the_answers_inspect_scored(made):
    from inspect_ai.log import read_eval_log

    plain, shuffled = made["inspect"]
    spec = ImportSpec(dataset="aqua", runs=[{"file": str(plain), "run": "inspect"},
                                            {"file": str(shuffled), "run": "inspect shuffled"}])  # fmt: skip
    df, report = import_runs(spec)
    assert [r.format for r in report.runs] == ["inspect", "inspect"]
    by_text = {q.text: q for q in made["questions"]}
    for path, name, r in zip((plain, shuffled), ("inspect", "inspect shuffled"), report.runs):
        log = read_eval_log(str(path))  # what Inspect itself logged, by its own reader
        assert r.matched == N and r.unmatched == 0 and r.score_disagreements == [] and r.model == log.eval.model
        assert r.missing == 254 - N and r.gold_conflicts == []
        mine = df[df["template"] == name].set_index("question_id")
        for s in log.samples:
            q = by_text[s.input]
            score = s.scores["choice"]
            row = mine.loc[q.id]
            # the letter Inspect's scorer read names an option of the order Inspect showed; the record has the
            # dataset's label of that option's text
            shown = s.choices[ord(score.answer) - 65] if score.answer else None
            want = next((k for k, v in q.options.items() if v == shown), None)
            assert row["extracted"] == want and bool(row["correct"]) == (score.value == "C")
            assert row["raw_output"] == s.output.completion and row["model"] == log.eval.model
    # the shuffled log really showed other orders: at least one question's options moved
    log = read_eval_log(str(shuffled))
    assert any(s.choices != list(by_text[s.input].options.values()) for s in log.samples)


def test_lm_eval_samples_import_one_run_per_filter_with_lm_evals_verdicts(made):
    lines = [json.loads(line) for line in made["lm_eval"].read_text().splitlines()]
    spec = ImportSpec(dataset="aqua", runs=[{"file": str(made["lm_eval"])}])
    df, report = import_runs(spec)
    assert sorted(r.run for r in report.runs) == ["aqua_tiny [last-letter]", "aqua_tiny [letter]"]
    by_text = {q.text: q for q in made["questions"]}
    for r in report.runs:
        assert r.format == "lm-eval" and r.matched == N and r.score_disagreements == []
        assert r.model  # from the results file lm-eval wrote beside the samples
        mine = df[df["template"] == r.run].set_index("question_id")
        for line in (x for x in lines if r.run.endswith(f"[{x['filter']}]")):
            q = by_text[line["doc"]["question"]]
            answer = line["filtered_resps"][0]
            assert mine.loc[q.id, "extracted"] == (answer if answer in q.options else None)
            assert bool(mine.loc[q.id, "correct"]) == (line["exact_match"] == 1.0)
            assert mine.loc[q.id, "raw_output"] == line["resps"][0][0]
    # one filter named: one run
    one, _ = import_runs(ImportSpec(dataset="aqua", runs=[{"file": str(made["lm_eval"]), "filter": "letter"}]))
    assert set(one["template"]) == {"aqua_tiny"}


def test_a_file_that_is_not_the_tools_log_is_one_clear_error(made, tmp_path):
    from olakit.errors import DataError

    fake = tmp_path / "x.eval"
    fake.write_text("not a zip")
    with pytest.raises(DataError, match=r"x.eval: not an Inspect log inspect_ai can read"):
        import_runs(ImportSpec(dataset="aqua", runs=[{"file": str(fake)}]))
    bad = tmp_path / "samples_t_2026-01-01T00-00-00.jsonl"
    bad.write_text('{"doc": {}, "target": "A"}\n')
    with pytest.raises(DataError, match=r"line 1: not an lm-eval sample line \(no 'resps'\)"):
        import_runs(ImportSpec(dataset="aqua", runs=[{"file": str(bad)}]))
    choice = tmp_path / "samples_mc_2026-01-01T00-00-00.jsonl"  # the refusal's own test: one line, no import
    choice.write_text('{"doc": {}, "target": 0, "resps": [[[-1.0, false]]], "filtered_resps": [[-1.0, false], [-2.0, '
                      'false]]}\n')  # fmt: skip
    with pytest.raises(DataError, match=r"line 1: an lm-eval multiple-choice \(loglikelihood\) sample"):
        import_runs(ImportSpec(dataset="aqua", runs=[{"file": str(choice)}]))
    with pytest.raises(DataError, match="no filter 'strict'; it has letter, last-letter"):
        import_runs(ImportSpec(dataset="aqua", runs=[{"file": str(made["lm_eval"]), "filter": "strict"}]))
