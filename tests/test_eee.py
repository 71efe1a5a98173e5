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
