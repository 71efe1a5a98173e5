"""Loaders on every dataset, and bad input getting one clear error that names file and line."""

import json

import pytest

from olakit.data.loaders import (
    load_olagpt_notes,
    load_questions,
    resolve_data_dir,
)
from olakit.errors import DataError, UnknownNameError


def test_aqua(data_dir):
    for split in ("test", "dev"):
        qs = load_questions("aqua", split, data_dir)
        assert len(qs) == 254
        assert all(list(q.options) == ["A", "B", "C", "D", "E"] and q.gold in q.options for q in qs)
    q0 = load_questions("aqua", "test", data_dir)[0]
    assert q0.id == "test-0" and q0.gold == "A" and q0.options["A"] == "5(√3 + 1)"
    assert q0.text.startswith("A car is being driven")


def test_ekar_chinese(data_dir):
    train, val = load_questions("ekar_zh", "train", data_dir), load_questions("ekar_zh", "validation", data_dir)
    assert (len(train), len(val)) == (1155, 165)
    assert all(list(q.options) == ["A", "B", "C", "D"] for q in train + val)
    golds = [q.gold for q in val]
    assert (golds.count("A"), golds.count("B"), golds.count("C"), golds.count("D")) == (36, 53, 37, 39)
    assert any("\u4e00" <= ch <= "\u9fff" for ch in val[0].text + "".join(val[0].options.values()))
    with pytest.raises(DataError, match="no gold labels"):
        load_questions("ekar_zh", "test_blind", data_dir)


def test_strategyqa(data_dir):
    train, dev = load_questions("strategyqa", "train", data_dir), load_questions("strategyqa", "dev", data_dir)
    assert (len(train), len(dev)) == (2061, 229)
    assert sum(q.gold == "yes" for q in train) == 964 and sum(q.gold == "yes" for q in dev) == 107
    assert dev[0].options == {"yes": "yes", "no": "no"}
    # read through its description (resources/datasets.json) as any file: checked against the raw file itself
    raw = json.loads((data_dir / "strategyqa" / "dev.json").read_text())
    assert [q.text for q in dev] == [r["question"] for r in raw]  # as given, whitespace included (1 has some)
    assert [q.rationale for q in dev] == [" ".join(r["facts"]) for r in raw]
    assert [q.meta["decomposition"] for q in dev] == [r["decomposition"] for r in raw] and dev[0].kind == "yes_no"


def test_olagpt_notes(data_dir):
    notes = load_olagpt_notes(data_dir)
    assert len(notes) == 81
    assert len({n["llm_task_type"] for n in notes}) == 54
    n0 = notes[0]
    assert n0["answer"] == "B" and n0["options"]["B"] == "33,000"  # the label; the recorded text is "B)33,000"
    assert n0["question"].startswith("Anish borrowed") and set(n0) >= {
        "question",
        "answer",
        "error_reason",
        "model_expert",
        "explanation",
        "llm_task_type",
        "id",
        "source",
    }


def test_load_by_name(data_dir):
    assert len(load_questions("aqua", "test", data_dir)) == 254
    with pytest.raises(UnknownNameError, match="unknown dataset 'gsm8k'; known: aqua, ekar_zh, strategyqa"):
        load_questions("gsm8k", "test", data_dir)


def _aqua_dir(tmp_path, lines):
    (tmp_path / "aqua").mkdir()
    (tmp_path / "aqua" / "test.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


GOOD = json.dumps({"question": "1+1?", "options": ["A)1", "B)2"], "rationale": "", "correct": "B"})


def test_malformed_jsonl_line_names_file_and_line(tmp_path):
    d = _aqua_dir(tmp_path, [GOOD, GOOD, '{"question": "x", "options": ['])
    with pytest.raises(DataError, match=r"aqua/test\.json line 3: malformed JSON"):
        load_questions("aqua", "test", d)


def test_question_without_options(tmp_path):
    d = _aqua_dir(tmp_path, [GOOD, json.dumps({"question": "?", "options": [], "correct": "A"})])
    with pytest.raises(DataError, match=r"test\.json line 2: 0 option\(s\) in 'options'; a choice needs at least 2"):
        load_questions("aqua", "test", d)


def test_gold_not_among_options(tmp_path):
    d = _aqua_dir(tmp_path, [json.dumps({"question": "?", "options": ["A)1", "B)2"], "correct": "E"})])
    with pytest.raises(
        DataError, match=r"test\.json line 1: answer 'E' in 'correct' is not among its options \['A', 'B'\]"
    ):
        load_questions("aqua", "test", d)


def test_missing_data_directory(tmp_path, monkeypatch):
    with pytest.raises(DataError, match="does-not-exist does not exist; run `olakit data fetch"):
        resolve_data_dir(tmp_path / "does-not-exist")
    monkeypatch.setenv("OLAKIT_DATA_DIR", str(tmp_path / "nope"))
    with pytest.raises(DataError, match="nope does not exist"):
        resolve_data_dir()


def test_missing_file_in_data_directory(tmp_path):
    with pytest.raises(DataError, match=r"ekar_chinese/train\.json: file not found"):
        load_questions("ekar_zh", "train", tmp_path)


def test_two_writers_of_one_path_never_share_a_temporary_file(tmp_path):
    """write_atomic's temporary file is its process's and thread's own: eight threads writing one path at once each
    write a whole file, the path ends as one of them, and no temporary file is left (two kernels of a sweep once
    shared `.x.tmp`)."""
    import threading

    from olakit.data.files import write_atomic

    target, start = tmp_path / "kept.txt", threading.Barrier(8)

    def write(i):
        def body(tmp):
            start.wait()
            tmp.write_text(str(i) * 100_000)

        write_atomic(target, body)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    text = target.read_text()
    assert len(text) == 100_000 and len(set(text)) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["kept.txt"]
