"""Every Eval Ever instance-level files (olakit.data.eee) through its own package: olakit's records exported, each
line checked by the package's pydantic model and by the JSON schema the package ships, then imported back with the
same answers; a line that is not an instance is one clear error."""

import json
from importlib import resources

import pytest

from olakit.data.imported import ImportSpec, import_runs, load_import_spec
from olakit.errors import DataError

REPO = __import__("pathlib").Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def pot(tmp_path_factory):
    from olakit.cli import main

    out = tmp_path_factory.mktemp("eee")
    assert main(["import", str(REPO / "imports" / "pot_aqua.yaml"), "--out", str(out / "pot")]) == 0
    assert main(["export", str(out / "pot"), "--out", str(out / "pot.jsonl")]) == 0
    return out


def test_records_exported_as_instances_the_package_and_its_schema_accept(pot):
    # jsonschema here, not at the top: its import builds rfc3987_syntax's parsers (0.9 CPU s), in each worker's
    # collection at the top (three in make test; tests/test_notebook.py defers papermill and nbformat for the same)
    import jsonschema
    from every_eval_ever.instance_level_types import InstanceLevelEvaluationLog

    from olakit.data.records import load_records

    schema = json.loads(
        resources.files("every_eval_ever").joinpath("schemas/instance_level_eval.schema.json").read_text()
    )
    lines = (pot / "pot.jsonl").read_text().splitlines()
    records = load_records(pot / "pot" / "records.parquet")
    assert len(lines) == len(records) == 4 * 253
    for line in lines:
        doc = json.loads(line)
        jsonschema.validate(doc, schema)  # the schema file the package ships
        log = InstanceLevelEvaluationLog.model_validate(doc)  # and its model
        assert log.evaluation.is_correct == (log.evaluation.score == 1.0)
    first = json.loads(lines[0])
    row = records.iloc[0]
    assert (first["sample_id"], first["model_id"], first["evaluation_name"]) == (row["question_id"], row["model"],
                                                                                f"aqua/{row['template']}")  # fmt: skip
    assert first["input"]["reference"] == [row["gold"]] and first["output"]["raw"] == [row["raw_output"]]
    unparsed = [json.loads(x) for x in lines if not json.loads(x)["answer_attribution"]]
    assert len(unparsed) == int(records["extracted"].isna().sum())  # no answer attribution where none was read


def test_an_exported_file_imports_back_with_the_same_answers(pot):
    from olakit.data.records import load_records

    # the file's verdicts are the records' (scored as PoT scored them): read back as the source's own
    spec = ImportSpec(dataset="aqua", score="source", runs=[{"file": str(pot / "pot.jsonl")}])
    back, report = import_runs(spec)
    assert [r.format for r in report.runs] == ["eee"] * 4
    assert all(r.matched == 253 and r.gold_conflicts == [] for r in report.runs)
    source = load_records(pot / "pot" / "records.parquet")
    assert sum(len(r.score_disagreements) for r in report.runs) == (source["correct"] != source["olakit_correct"]).sum()
    cols = ["extracted", "correct", "olakit_correct", "model"]
    mine = source.set_index(["template", "question_id"])[cols]
    theirs = back.assign(template=back["template"].str.removeprefix("aqua/"))
    theirs = theirs.set_index(["template", "question_id"])[cols].loc[mine.index]
    assert mine.astype(str).equals(theirs.astype(str))


def test_a_line_that_is_not_an_instance_is_one_clear_error(pot, tmp_path):
    good = (pot / "pot.jsonl").read_text().splitlines()[0]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good + "\n" + json.dumps({**json.loads(good), "evaluation": {"score": 1.0}}) + "\n")
    with pytest.raises(DataError, match=r"bad.jsonl line 2: not an Every Eval Ever instance"):
        import_runs(ImportSpec(dataset="aqua", runs=[{"file": str(bad), "format": "eee"}]))
    spec = tmp_path / "s.yaml"
    spec.write_text(f"dataset: aqua\nruns:\n  - {{file: {bad}, format: eee}}\n")
    assert load_import_spec(spec).runs[0].format == "eee"


def test_records_exported_and_read_back_field_by_field(tmp_path):
    """Three records worked by hand through export_eee and eee_rows (a hand mutation pass over olakit.data.eee: 16 of
    its 23 mutants survived the round trips over PoT's runs above). q0's T1 answers twice (samples 0 and 1) and q1
    once, unread (NaN, as a frame computed by pandas holds it). Each line: the question's content hash, the option
    texts as the choices (the labels in olakit's metadata), tokens with their total, latency in milliseconds, the
    sample in the key; a file read back keeps both samples of q0, its reasoning tokens, and skips a blank line."""
    from every_eval_ever import instance_level_types as types

    from olakit.data.eee import eee_rows, export_eee
    from olakit.data.records import to_frame
    from olakit.types import Question
    from tests.toys import record

    questions = {"q0": Question("q0", "toy", "Two?", {"A": "one", "B": "two"}, "B"),
                 "q1": Question("q1", "toy", "One?", {"A": "one", "B": "two"}, "A")}  # fmt: skip
    common = {"dataset": "toy", "gold": "B", "question_hash": "0123abcd"}
    rows = [
        record("q0", "T1", "B", **common, raw_output="It is B.", prompt_tokens=10, completion_tokens=5,
               reasoning_tokens=3, reasoning="two is B", latency=0.25),
        record("q0", "T1", "A", **common, raw_output="A.", sample=1, prompt_tokens=10, completion_tokens=4),
        record("q1", "T1", None, dataset="toy", gold="A", raw_output="?", model="", unparsed_cause="no_answer"),
    ]  # fmt: skip
    df = to_frame(rows)
    df["extracted"] = df["extracted"].astype(object).where(df["extracted"].notna(), float("nan"))
    path = export_eee(df, tmp_path / "toy.jsonl", questions, evaluation_id="e",
                      cells=["template", "notes_strategy", "n_notes"])  # fmt: skip
    text = path.read_text()
    assert text.endswith("}\n")
    first, second, third = (json.loads(x) for x in text.splitlines())
    assert (first["sample_id"], first["sample_hash"], first["model_id"], first["evaluation_name"]) == (
        "q0", "0123abcd", "m", "toy/T1")  # fmt: skip
    assert first["input"] == {"raw": "Two?", "reference": ["B"], "choices": ["one", "two"]}
    assert first["output"] == {"raw": ["It is B."], "reasoning_trace": ["two is B"]}
    assert first["token_usage"] == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15, "reasoning_tokens": 3}
    assert first["performance"]["latency_ms"] == 250.0
    assert [a["extracted_value"] for a in first["answer_attribution"]] == ["B"]
    assert first["metadata"]["olakit.labels"] == '["A", "B"]' and first["metadata"]["olakit.sample"] == "0"
    assert second["metadata"]["olakit.sample"] == "1" and second["evaluation"] == {"score": 0.0, "is_correct": False}
    assert third["answer_attribution"] == [] and third["model_id"] == "unknown" and "sample_hash" not in third
    path.write_text(text + "\n")  # a blank line at the end, as an editor leaves one
    (run, model, read), (_, _, unknown) = eee_rows(path)
    assert (run, model) == ("toy/T1", "m") and [row["repeat"] for _, row in read] == [0, 1]
    assert read[0][1]["reasoning_tokens"] == 3 and read[0][1]["answer"] == "B" and unknown[0][1]["answer"] is None
    assert read[0][1]["choices"] == ["one", "two"]
    # another tool's line: several answers attributed, the last terminal one is the answer; the first reference
    # is the target
    other = json.loads(text.splitlines()[0]) | {"input": {"raw": "Two?", "reference": ["B", "two"]}}
    other["answer_attribution"] = [
        {"turn_idx": 0, "source": "output.raw", "extracted_value": v, "extraction_method": "x", "is_terminal": t}
        for v, t in (("A", True), ("B", True), ("C", False))
    ]
    types.InstanceLevelEvaluationLog.model_validate(other)  # a line the package accepts
    path.write_text(json.dumps(other) + "\n")
    ((_, _, [(_, row)]),) = eee_rows(path)
    assert (row["answer"], row["target"]) == ("B", "B")
