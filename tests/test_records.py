"""Records: parquet round trip, format version check, key uniqueness, re-extraction."""

import json
import re

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from olakit.data.records import load_records, save_records, to_frame
from olakit.errors import DataError
from olakit.types import OlaGPTRecord
from tests.toys import record


def rec(**kw):
    kw = {"dataset": "aqua", "raw_output": "Answer: A", **kw}
    return record(kw.pop("question_id", "test-0"), kw.pop("template", "ST"), kw.pop("extracted", "A"), **kw)


def test_round_trip(tmp_path):
    df = to_frame(
        [
            rec(),
            rec(
                sample=1,
                extracted=None,
                correct=False,
                prompt_tokens=12,
                completion_tokens=3,
                cost=0.001,
                latency=0.5,
                cached=True,
                note_ids=("n1", "n2"),
            ),
        ]
    )
    path = save_records(df, tmp_path / "r.parquet")
    back = load_records(path)
    pd.testing.assert_frame_equal(df, back)
    assert back.loc[1, "note_ids"] == ["n1", "n2"] and back.loc[1, "extracted"] is None


def test_recorded_olagpt_round_trip(tmp_path, olagpt_records):
    back = load_records(save_records(olagpt_records, tmp_path / "r.parquet"))
    pd.testing.assert_frame_equal(olagpt_records, back)


def test_format_version_checked(tmp_path):
    df = to_frame([rec()])
    table = pa.Table.from_pandas(df, preserve_index=False).replace_schema_metadata({b"olakit_records_format": b"99"})
    pq.write_table(table, tmp_path / "future.parquet")
    with pytest.raises(DataError, match=r"records format version 99, this olakit reads 8 \(and 5, 6, 7\)"):
        load_records(tmp_path / "future.parquet")
    # a version-5 file (no run column; its key without run and model) reads as one run's records
    old = pa.Table.from_pandas(df.drop(columns=["run", "reasoning", "reasoning_tokens"]), preserve_index=False)
    pq.write_table(old.replace_schema_metadata({b"olakit_records_format": b"5"}), tmp_path / "v5.parquet")
    back = load_records(tmp_path / "v5.parquet")
    assert list(back.columns) == list(df.columns) and back["run"].tolist() == [""]
    pd.testing.assert_frame_equal(back, df)
    # a version-7 file (no thinking apart) reads with none
    seven = pa.Table.from_pandas(df.drop(columns=["reasoning", "reasoning_tokens"]), preserve_index=False)
    pq.write_table(seven.replace_schema_metadata({b"olakit_records_format": b"7"}), tmp_path / "v7.parquet")
    pd.testing.assert_frame_equal(load_records(tmp_path / "v7.parquet"), df)
    pq.write_table(pa.Table.from_pandas(df), tmp_path / "plain.parquet")
    with pytest.raises(DataError, match="not an olakit records file"):
        load_records(tmp_path / "plain.parquet")
    with pytest.raises(DataError, match="records file not found"):
        load_records(tmp_path / "missing.parquet")


def test_duplicate_keys_refused_and_nothing_written(tmp_path):
    df = to_frame([rec(), rec()])
    with pytest.raises(DataError, match="1 duplicate records"):
        save_records(df, tmp_path / "dup.parquet")
    assert not list(tmp_path.iterdir())


def test_each_method_has_its_own_columns_and_key(tmp_path):
    """GEEK's row, corpus and k, and the review loop's loop and iteration, are columns of their own (never OlaGPT's
    template, notes_strategy or n_notes), the file says its kind, and the key is the kind's."""
    from olakit.types import GeekRecord, ReviewRecord

    shared = dict(model="m", prompt_hash="h", raw_output="no", extracted="no", gold="no", correct=True)
    geek = to_frame(
        [
            GeekRecord(dataset="strategyqa", question_id="q", row=row, corpus="open", retriever="bm25", k=3, **shared)
            for row in ("+RE", "Full")
        ]
    )
    assert list(geek.columns[:8]) == ["run", "model", "dataset", "question_id", "row", "corpus", "retriever", "k"]
    assert not {"template", "notes_strategy", "n_notes", "sample"} & set(geek.columns)
    save_records(geek, tmp_path / "geek.parquet")
    assert load_records(tmp_path / "geek.parquet").equals(geek)
    meta = pq.read_schema(tmp_path / "geek.parquet").metadata
    assert meta[b"olakit_records_kind"] == b"geek"
    twice = to_frame([ReviewRecord(dataset="aqua", question_id="q", loop="direct", iteration=0, **shared)] * 2)
    first = "{'run': '', 'model': 'm', 'dataset': 'aqua', 'question_id': 'q', 'loop'"
    with pytest.raises(DataError, match=f"1 duplicate records, first {first}"):
        save_records(twice, tmp_path / "r.parquet")
    # two models' (or two runs') answers under the same names share a file: the run and model are in the key
    other = ReviewRecord(dataset="aqua", question_id="q", loop="direct", iteration=0, **{**shared, "model": "m2"})
    two = to_frame([ReviewRecord(dataset="aqua", question_id="q", loop="direct", iteration=0, **shared), other])
    assert load_records(save_records(two, tmp_path / "two.parquet")).equals(two)
    with pytest.raises(DataError, match="records of several kinds in one table"):
        to_frame([rec(), GeekRecord(dataset="s", question_id="q", row="CoT", corpus="", retriever="", k=0, **shared)])


def test_an_override_written_before_run_and_model_were_keys_still_applies(tmp_path):
    import json

    df = to_frame([rec(model="m1"), rec(model="m2", extracted="B")])
    path = save_records(df, tmp_path / "records.parquet")
    old = {"dataset": "aqua", "question_id": "test-0", "template": "ST", "notes_strategy": "zero-shot", "n_notes": 0,
           "sample": 0, "extracted": "C", "reason": "the model wrote 'three'"}  # fmt: skip
    (tmp_path / "records.overrides.jsonl").write_text(json.dumps(old) + "\n")
    back = load_records(path)  # no model named: it applies to the record of each model
    assert back["extracted"].tolist() == ["C", "C"] and back["overridden"].all()
    new = {**old, "run": "", "model": "m2", "extracted": "A", "reason": "m2 wrote 'one'"}
    with open(tmp_path / "records.overrides.jsonl", "a") as fh:
        fh.write(json.dumps(new) + "\n")
    back = load_records(path)  # one naming its model applies to that model's record only
    assert back.set_index("model")["extracted"].to_dict() == {"m1": "C", "m2": "A"}


def test_overrides_a_person_writes_by_hand(tmp_path):
    """What the overrides file takes, read back through load_records (a hand mutation pass over
    olakit.data.overrides: each of these survived the tests before): the later of two overrides of one record wins;
    a label of None marks the answer unread even where the question's labels are given; the reason is kept without
    its spaces, and one of spaces only is refused; a file a person saved without its last newline still gets the
    next override on a line of its own; a key read from a frame (numpy integers) is written as JSON's."""
    import json

    import numpy as np

    from olakit.data.overrides import add_override

    df = to_frame([rec(question_id="q0"), rec(question_id="q1"), rec(question_id="q2")])
    path = save_records(df, tmp_path / "records.parquet")
    ov = tmp_path / "records.overrides.jsonl"
    key = {"run": "", "model": "m", "dataset": "aqua", "template": "ST", "notes_strategy": "zero-shot",
           "n_notes": np.int64(0), "sample": np.int64(0)}  # fmt: skip
    add_override(ov, {**key, "question_id": "q0"}, "B", "  first reading  ", labels=["A", "B"])
    add_override(ov, {**key, "question_id": "q0"}, "C", "second reading", labels=["A", "B", "C"])
    add_override(ov, {**key, "question_id": "q1"}, None, "no answer in the text", labels=["A", "B"])
    with pytest.raises(DataError, match="needs a reason"):
        add_override(ov, {**key, "question_id": "q2"}, "B", "   ")
    assert json.loads(ov.read_text().splitlines()[0])["reason"] == "first reading"
    ov.write_text(ov.read_text().rstrip("\n"))  # saved by an editor that drops the last newline
    add_override(ov, {**key, "question_id": "q2"}, "D", "the model wrote 'four'")
    assert len(ov.read_text().splitlines()) == 4
    back = load_records(path).set_index("question_id")
    assert back["extracted"].to_dict() == {"q0": "C", "q1": None, "q2": "D"}
    assert back["correct"].tolist() == [False, False, False] and back["overridden"].all()


def test_the_recorded_outputs_are_read_once_and_again_when_a_file_changes(tmp_path, monkeypatch, data_dir):
    """import_olagpt keeps its records under a key of its inputs' bytes: the second import reads them back equal,
    and an edited output file is read again (its new answer counted), never served from the kept copy."""
    from olakit.data import recorded

    monkeypatch.setenv("OLAKIT_INDEX_DIR", str(tmp_path / "idx"))
    mine = copy_recorded(data_dir, tmp_path / "data")
    first = recorded.import_olagpt(mine)
    (kept,) = (tmp_path / "idx" / "recorded").glob("*.parquet")
    calls = []
    monkeypatch.setattr(recorded, "_import_olagpt", lambda *a: calls.append(a) or first)
    pd.testing.assert_frame_equal(recorded.import_olagpt(mine), first)
    assert calls == []  # read back, not imported again
    monkeypatch.undo()
    monkeypatch.setenv("OLAKIT_INDEX_DIR", str(tmp_path / "idx"))
    path = mine / "olagpt" / "data" / "predictions" / "st" / "aqua_predict.json"
    doc = json.loads(path.read_text())
    pred = doc["predictions"][0]
    st = first[(first["template"] == "ST") & (first["notes_strategy"] == "zero-shot")]
    other = st[st["extracted"].notna() & (st["extracted"] != pred["answer"][:1])].iloc[0]
    wrong, pred["output"] = other["extracted"], other["raw_output"]  # another question's output, read as it was
    path.write_text(json.dumps(doc))
    again = recorded.import_olagpt(mine)
    row = again[(again["template"] == "ST") & (again["notes_strategy"] == "zero-shot")].iloc[0]
    assert row["extracted"] == wrong and not row["correct"]
    assert len(list((tmp_path / "idx" / "recorded").glob("*.parquet"))) == 2 and kept.exists()
    # only the most recently used KEEP stay (every edit of olakit's code is a new key)
    monkeypatch.setattr(recorded, "KEEP", 1)
    path.write_text(
        json.dumps({**doc, "predictions": [{**pred, "output": pred["output"] + " "}, *doc["predictions"][1:]]})
    )
    recorded.import_olagpt(mine)
    assert len(list((tmp_path / "idx" / "recorded").glob("*.parquet"))) == 1 and not kept.exists()


def copy_recorded(data_dir, to):
    """A writable copy of what import_olagpt reads (aqua/ and the authors' predictions)."""
    import shutil

    shutil.copytree(data_dir / "aqua", to / "aqua")
    shutil.copytree(data_dir / "olagpt" / "data" / "predictions", to / "olagpt" / "data" / "predictions")
    return to


def test_the_recorded_outputs_records_by_hand(tmp_path, monkeypatch, data_dir):
    """What each imported record says, read against the authors' files by hand: zero-shot has no notes and the
    other strategies 3 (their top_n), ST's extra runs 1 and 5; the prompt's length and sha256 are the recorded
    input's, not the output's; a read answer has no unparsed cause; a question's content hash is the same under
    every template and differs between questions. And the kept copy is keyed by the extractor and the parts too,
    and one that cannot be read is imported again (a hand mutation pass over olakit.data.recorded: each of these
    survived the tests before)."""
    import hashlib
    import json

    from olakit.data import recorded

    monkeypatch.setenv("OLAKIT_INDEX_DIR", str(tmp_path / "idx"))
    mine = copy_recorded(data_dir, tmp_path / "data")
    df = recorded.import_olagpt(mine, parts=("templates", "st_notes_count"))
    notes = df.groupby(["template", "notes_strategy"])["n_notes"].unique().map(sorted).to_dict()
    assert notes[("DT", "zero-shot")] == [0] and notes[("DT", "combine")] == [3]
    assert notes[("ST", "zero-shot")] == [0] and notes[("ST", "random")] == [1, 3, 5]
    pred = json.loads((mine / "olagpt/data/predictions/pt/aqua_predict_few_shot_random.json").read_text())
    pred = pred["predictions"][5]
    row = df.set_index(["template", "notes_strategy", "question_id"]).loc[("PT", "random", f"test-{5}")]
    assert row["prompt_chars"] == len(pred["input"])
    assert row["prompt_hash"] == hashlib.sha256(pred["input"].encode()).hexdigest()
    assert (df.loc[df["extracted"].notna(), "unparsed_cause"] == "").all()
    assert (df.loc[df["extracted"].isna(), "unparsed_cause"] != "").all()
    hashes = df.groupby("question_id")["question_hash"].unique()
    assert hashes.map(len).eq(1).all() and hashes.map(lambda h: h[0]).nunique() == 254
    # the kept copy: another extractor, or other parts, is another import, never the first one read back
    first = recorded.import_olagpt(mine, extractor="olagpt")
    other = recorded.import_olagpt(mine, extractor="strict")
    assert not first["extracted"].equals(other["extracted"])  # the readers disagree on some outputs
    assert "llm_vote" in set(
        recorded.import_olagpt(mine, extractor="olagpt", parts=("templates", "llm_vote"))["template"]
    )
    for kept in (tmp_path / "idx" / "recorded").glob("*.parquet"):
        kept.write_bytes(b"not parquet")  # a disk fault
    pd.testing.assert_frame_equal(recorded.import_olagpt(mine, extractor="olagpt"), first)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda doc: doc["predictions"].pop(), "253 predictions, expected 254"),
        (lambda doc: doc["predictions"][3].update(question_id=254), "question_id 254 is not an AQuA test index"),
        (lambda doc: doc["predictions"][3].update(question_id="3"), "question_id '3' is not an AQuA test index"),
        (
            lambda doc: doc["predictions"][3].update(input=json.dumps({"question": "question: How many?"})),
            "prediction 3: question text differs from aqua/test.json question 3",
        ),
        (lambda doc: doc["predictions"][3].update(input="[1, 2]"), "prediction 3: field 'input' is not a JSON object"),
        (lambda doc: doc["predictions"][3].update(output=["A"]), "prediction 3: field 'output' is not text"),
    ],
)
def test_a_recorded_file_edited_or_cut_is_refused_where_it_is_wrong(tmp_path, monkeypatch, data_dir, edit, message):
    from olakit.data.recorded import import_olagpt

    monkeypatch.setenv("OLAKIT_INDEX_DIR", str(tmp_path / "idx"))
    mine = copy_recorded(data_dir, tmp_path / "data")
    path = mine / "olagpt/data/predictions/dst/aqua_predict.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(DataError, match=re.escape(message)):
        import_olagpt(mine)


def test_a_recorded_question_with_other_spacing_is_the_same_question(tmp_path, monkeypatch, data_dir):
    from olakit.data.recorded import import_olagpt

    monkeypatch.setenv("OLAKIT_INDEX_DIR", str(tmp_path / "idx"))
    mine = copy_recorded(data_dir, tmp_path / "data")
    path = mine / "olagpt/data/predictions/dst/aqua_predict.json"
    doc = json.loads(path.read_text())
    prompt = json.loads(doc["predictions"][0]["input"])
    prompt["question"] = prompt["question"].replace(" ", "  \n ", 3)  # line breaks inside the question
    doc["predictions"][0]["input"] = json.dumps(prompt)
    path.write_text(json.dumps(doc))
    assert len(import_olagpt(mine)) == 5 * 4 * 254


def test_records_given_by_column_make_the_frame_their_objects_make():
    from olakit.data.records import frame_of

    rows = [dict(dataset="aqua", question_id=f"test-{i}", model="m", prompt_hash="h", raw_output=f"so {g}",
                 extracted=g, gold="A", correct=g == "A", template="ST", notes_strategy="zero-shot", n_notes=0,
                 source_correct=None if i else True) for i, g in enumerate(["A", "B", None])]  # fmt: skip
    want = to_frame([OlaGPTRecord(**r) for r in rows])
    varying = {k: [r[k] for r in rows] for k in rows[0] if k not in ("template", "notes_strategy", "n_notes")}
    got = frame_of(OlaGPTRecord, 3, varying, {"template": "ST", "notes_strategy": "zero-shot", "n_notes": 0})
    pd.testing.assert_frame_equal(got, want)
    assert got["note_ids"].iloc[0] is not got["note_ids"].iloc[1]  # a default list is each row's own
    with pytest.raises(TypeError, match="no fields"):
        frame_of(OlaGPTRecord, 3, {**varying, "templat": ["ST"] * 3})
    with pytest.raises(TypeError, match="'template' is required"):
        frame_of(OlaGPTRecord, 3, varying, {"notes_strategy": "zero-shot", "n_notes": 0})
    with pytest.raises(ValueError, match="3 records"):
        frame_of(OlaGPTRecord, 3, {**varying, "gold": ["A"]})
