"""Your own dataset (olakit.data.datasets): the shipped GSM8K and CommonsenseQA files, the layouts olakit
recognises, a mapping for the rest, every kind of bad row, and the numeric answers (olakit.answering.extract): their
reading, their comparison and their votes, on crafted outputs and on PoT's recorded GSM8K values."""

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from olakit.answering.extract import extract_number, get_extractor
from olakit.answering.majority import majority
from olakit.answering.read import canonical_number, read_number
from olakit.config import ConfigError
from olakit.data.datasets import DatasetMap, load_file, parse_map, question_hash
from olakit.data.loaders import load_questions
from olakit.errors import DataError


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_gsm8k_is_recognised_with_its_number_after_the_hashes(data_dir):
    path = data_dir / "gsm8k" / "test.jsonl"
    questions = load_file(path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(questions) == len(lines) == 1319
    # the gold, read independently: the text after the last "#### ", commas dropped
    expected = [line["answer"].split("####")[-1].strip().replace(",", "") for line in lines]
    assert [q.gold for q in questions] == expected
    q = questions[0]
    assert (q.dataset, q.id, q.kind, q.options, q.gold) == ("gsm8k", "0", "number", {}, "18")
    assert q.rationale.startswith("Janet sells 16 - 3 - 4") and "####" not in q.rationale
    assert any("," in line["answer"].split("####")[-1] for line in lines)  # "1,600"-style golds exist and were read


def test_commonsenseqa_is_recognised_with_its_nested_choices(data_dir):
    path = data_dir / "commonsenseqa" / "dev_rand_split.jsonl"
    questions = load_file(path)
    first = json.loads(path.read_text().splitlines()[0])
    assert len(questions) == 1221 and all(len(q.options) == 5 for q in questions)
    q = questions[0]
    assert q.id == first["id"] and q.text == first["question"]["stem"] and q.gold == first["answerKey"]
    assert q.options == {c["label"]: c["text"] for c in first["question"]["choices"]}
    assert q.kind == "choice" and q.meta == {"question_concept": "revolving door"}


def test_the_seeds_files_read_through_the_generic_reader_match_their_loaders(data_dir):
    generic = load_file(data_dir / "aqua" / "test.json")  # JSON Lines under a .json name
    assert [(q.text, q.options, q.gold, q.rationale) for q in generic] == [
        (q.text, q.options, q.gold, q.rationale) for q in load_questions("aqua", "test", data_dir)
    ]


def test_the_common_layouts_are_recognised(tmp_path):
    # OpenCompass / EvalScope columns, as CSV (two, three and four options; empty cells are no option)
    csv = tmp_path / "mine_dev.csv"
    csv.write_text("question,A,B,C,D,answer,explanation\nWhich is even?,3,4,,,B,4 = 2 x 2\nPick c,a,b,c,d,C,\n")
    first, second = load_file(csv)
    assert first.dataset == "mine_dev" and first.options == {"A": "3", "B": "4"} and first.gold == "B"
    assert first.rationale == "4 = 2 x 2" and second.options == {"A": "a", "B": "b", "C": "c", "D": "d"}
    # a yes/no boolean, a yes/no word, a number with $ and a comma
    rows = [
        {"id": "y", "question": "Is ice cold?", "answer": True},
        {"id": "n", "question": "Is fire?", "answer": "No"},
    ]
    yn = load_file(write_jsonl(tmp_path / "yn.jsonl", rows))
    assert [(q.kind, q.gold, q.options) for q in yn] == [("yes_no", "yes", {"yes": "yes", "no": "no"})] + [
        ("yes_no", "no", {"yes": "yes", "no": "no"})
    ]
    num = load_file(write_jsonl(tmp_path / "num.jsonl", [{"question": "How much?", "answer": "$1,600.50"}]))
    assert (num[0].kind, num[0].gold, num[0].id) == ("number", "1600.5", "0")
    # a list of options with the answer as an index, and label -> text with the answer as the option's text
    data = [{"question": "2+2?", "choices": ["3", "4"], "answer": 1}]
    (tmp_path / "idx.json").write_text(json.dumps(data))  # a JSON array
    (j,) = load_file(tmp_path / "idx.json")
    assert j.options == {"A": "3", "B": "4"} and j.gold == "B"
    frame = pd.DataFrame([{"question": "Capital of France?", "options": {"x": "Paris", "y": "Rome"}, "answer": "rome"}])
    frame.to_parquet(tmp_path / "caps.parquet")
    assert [(q.options, q.gold) for q in load_file(tmp_path / "caps.parquet")] == [({"x": "Paris", "y": "Rome"}, "y")]
    (df_q,) = load_file(frame)  # a DataFrame from a notebook
    assert df_q.dataset == "dataframe" and df_q.gold == "y"


def test_a_mapping_names_the_fields_of_any_layout(tmp_path):
    rows = [{"key": "k1", "body": {"text": "Odd one?"}, "opts": [{"l": "1", "t": "two"}, {"l": "2", "t": "three"}],
             "gold": "2", "why": "three is odd", "src": "mine"}]  # fmt: skip
    path = write_jsonl(tmp_path / "odd.jsonl", rows)
    with pytest.raises(DataError, match=r"odd.jsonl line 1: a layout olakit does not recognise \(fields: body, gold,"):
        load_file(path)
    given = "id=key,question=body.text,choices=opts[].t,labels=opts[].l,answer=gold,rationale=why,meta=[src]"
    (q,) = load_file(path, given)
    assert (q.id, q.text, q.options, q.gold, q.rationale, q.meta) == (
        "k1", "Odd one?", {"1": "two", "2": "three"}, "2", "three is odd", {"src": "mine"},
    )  # fmt: skip
    (tmp_path / "odd.jsonl.map.yaml").write_text(
        "question: body.text\nchoices: opts[].t\nlabels: opts[].l\nanswer: gold\n"
    )
    assert load_file(path)[0].options == {"1": "two", "2": "three"}  # the mapping file beside it
    columns = tmp_path / "cols.csv"
    columns.write_text("q,first,second,right\nWhich?,yes it,no it,second\n")
    (c,) = load_file(columns, "question=q,choices=first|second,answer=right")
    assert c.options == {"first": "yes it", "second": "no it"} and c.gold == "second"
    assert parse_map({"question": "q"}) == DatasetMap(question="q")
    with pytest.raises(ConfigError, match="not NAME=FIELD"):
        parse_map("question")


@pytest.mark.parametrize(
    "rows, message",
    [
        (
            [{"question": "q?", "answer": "A", "choices": ["x", "y"]}, {"question": "r?", "choices": ["x", "y"]}],
            r"bad.jsonl line 2: field 'answer' missing",
        ),
        (
            [{"question": "q?", "choices": ["x", "y"], "answer": "C"}],
            r"bad.jsonl line 1: answer 'C' in 'answer' is not among its options \['A', 'B'\]",
        ),
        (
            [{"id": 1, "question": "q?", "answer": 2}, {"id": 1, "question": "r?", "answer": 3}],
            r"bad.jsonl line 2: duplicate id '1' \(first at .*bad.jsonl line 1\)",
        ),
        ([{"question": "", "answer": 2}], r"bad.jsonl line 1: field 'question' is empty or not text"),
        ([{"question": "q?", "answer": " "}], r"bad.jsonl line 1: field 'answer' \(the answer\) is empty"),
        ([{"question": "q?", "choices": ["only"], "answer": "A"}], r"1 option\(s\) in 'choices'; a choice needs at"),
    ],
    ids=["no answer", "not an option", "duplicate id", "empty question", "empty answer", "one option"],
)
def test_each_kind_of_bad_row_is_one_error_naming_file_line_and_field(tmp_path, rows, message):
    with pytest.raises(DataError, match=message):
        load_file(write_jsonl(tmp_path / "bad.jsonl", rows))


def test_bad_files_and_mappings(tmp_path):
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(DataError, match="empty.jsonl: no questions in it"):
        load_file(tmp_path / "empty.jsonl")
    with pytest.raises(DataError, match=r"unknown dataset format '.txt'"):
        load_file(tmp_path / "q.txt")
    path = write_jsonl(tmp_path / "m.jsonl", [{"question": "q?", "answer": 1}])
    with pytest.raises(DataError, match=r"m.jsonl line 1: field 'body' missing"):
        load_file(path, "question=body.text")
    missing = r"m.jsonl line 1: option column\(s\) 'B' missing \(the row has: question, A, answer\)"
    with pytest.raises(DataError, match=missing):
        load_file(write_jsonl(tmp_path / "m.jsonl", [{"question": "q?", "A": "x", "answer": "A"}]), "choices=A|B")
    with pytest.raises(DataError, match=r"1 option\(s\) in \('A', 'B'\); a choice needs at least 2"):
        load_file(
            write_jsonl(tmp_path / "m.jsonl", [{"question": "q?", "A": "x", "B": "", "answer": "A"}]), "choices=A|B"
        )
    with pytest.raises(DataError, match="answer 'x' in 'answer' is not a number"):
        load_file(write_jsonl(tmp_path / "n.jsonl", [{"question": "q?", "answer": "x"}]), "answer_form=number")
    with pytest.raises(DataError, match="a file is its own split"):
        load_questions(str(path), "test")
    with pytest.raises(DataError, match="nope.jsonl: dataset file not found"):
        load_questions(str(tmp_path / "nope.jsonl"))


def test_a_question_hash_sees_text_and_options_not_ids(tmp_path):
    a, b, c = load_file(write_jsonl(tmp_path / "h.jsonl", [
        {"id": "1", "question": "Two  plus two?", "choices": ["3", "4"], "answer": "B"},
        {"id": "2", "question": "two plus two?", "choices": ["3", "4"], "answer": "A"},
        {"id": "3", "question": "Two plus two?", "choices": ["3", "5"], "answer": "B"},
    ]))  # fmt: skip
    assert question_hash(a) == question_hash(b) != question_hash(c)  # spacing and case are not content; options are


def test_numbers_are_read_compared_and_voted_as_numbers():
    assert [canonical_number(x) for x in ("1,600", "-0.0", "07", "2/3", "1e3", "12.")] == [
        "1600", "0", "7", "0.666667", "1000", "12",
    ]  # fmt: skip
    assert read_number("worked out\n#### 1,234").value == "1234" and read_number(True).value is None
    outputs = {
        '{"Answer": "18"}': "18",
        "So the answer is $1,600.": "1600",
        "Total: 3 + 4 = 7 apples.\nThe answer is 7 apples.": "7",
        "First 5, then 6.\nAnswer: 6": "6",
        "\\boxed{42}": "42",
        "The answer (arabic numerals) is 0.5": "0.5",
        "#### 12": "12",
        "She buys 3 and eats 2, so some are left.": None,  # numbers, but no answer stated
        "Answer: about ten": None,
        "It is\n25": "25",  # a last line that is just a number
    }
    read = get_extractor("strict")
    assert {text: read(text, []) for text in outputs} == outputs  # no options: the number reader
    assert {text: extract_number(text) for text in outputs} == outputs
    assert get_extractor("olagpt")("Answer: 3 apples", []) == "3"  # whatever the extractor's name
    assert (
        majority([canonical_number(x) for x in ("18", "18.0", "1,8", "18.000")]) == "18"
    )  # equal numbers: one answer (1,8 none)


def test_pot_recorded_gsm8k_values_scored_against_their_gold(data_dir):
    """PoT's recorded executions (floats with float noise, None, or tuples as text) read as numbers: the counts
    equal an independent count with |executed - gold| < 1e-6 (PoT's README prints 0.716 and 0.569; it also took
    the first element of a tuple, which olakit reads as no number)."""
    folder = data_dir / "external" / "pot" / "outputs"
    for name, want_rows in (("gsm8K_s0_e-1_11_17_10_20.jsonl", 1318), ("gsm8K_zs_s0_e-1_11_19_09_55.jsonl", 1317)):
        rows = [json.loads(line) for line in (folder / name).read_text().splitlines()]
        rows = [r for r in rows if "question" in r]
        assert len(rows) == want_rows
        ours = sum(
            canonical_number(r["executed"]) is not None
            and canonical_number(r["executed"]) == canonical_number(r["answer"])
            for r in rows
        )
        numeric = [r for r in rows if isinstance(r["executed"], int | float) and not isinstance(r["executed"], bool)]
        independent = sum(math.isclose(r["executed"], r["answer"], rel_tol=0, abs_tol=1e-6) for r in numeric)
        assert ours == independent
        assert abs(ours / len(rows) - {1318: 0.716, 1317: 0.569}[want_rows]) < 0.003


def scripted(monkeypatch, reply: str):
    monkeypatch.setenv("OLAKIT_BASE_URL", f"scripted://tests.replies:{reply}")
    monkeypatch.setenv("OLAKIT_MODEL", "scripted")


def test_olakit_run_on_the_gsm8k_file(tmp_path, monkeypatch, capsys, data_dir):
    """`olakit run --dataset gsm8k/test.jsonl`: numeric answers read and scored, records named after the file's
    dataset with each question's hash, and the file's sha256 in the run log."""
    from olakit.cli import main
    from olakit.data.files import sha256_file
    from olakit.data.records import load_records

    scripted(monkeypatch, "numbers")
    out = tmp_path / "gsm"
    argv = ["run", "--dataset", "gsm8k/test.jsonl", "-n", "3", "--templates", "turbo,ST", "--strategies", "zero-shot"]
    assert main([*argv, "--out", str(out)]) == 0
    assert "planned: 9 calls" in capsys.readouterr().out  # 3 question types + 3 x 2 answers
    df = load_records(out / "records.parquet")
    answers = df[df["template"].isin(["turbo", "ST"])]
    assert set(answers["dataset"]) == {"gsm8k"} and set(answers["extracted"]) == {"18"}
    assert answers.groupby("question_id")["correct"].all().to_dict() == {
        "0": True,
        "1": False,
        "2": False,
    }  # 18, 3, 70000
    assert answers["question_hash"].str.len().eq(16).all() and answers["question_hash"].nunique() == 3
    methods = pd.read_csv(out / "tables" / "methods.csv").set_index("method")
    assert methods.loc["regex_vote", "accuracy"] == pytest.approx(1 / 3)
    log = json.loads((out / "run.json").read_text())
    gsm = str(data_dir / "gsm8k" / "test.jsonl")
    assert log["config"]["dataset"] == "gsm8k/test.jsonl" and log["data"][gsm] == sha256_file(gsm)
    assert log["extra"] == {
        "templates": ["ST", "turbo"],  # in the vote order (the authors': DT, DST, PT, ST, turbo)
        "question_type_prompt": ["kind:number"],
        "answer_kinds": ["number"],
        "replicate": None,
    }


def test_a_data_folder_reached_through_a_symlink_is_logged_as_reached(tmp_path, monkeypatch, capsys, data_dir):
    """../shared is often a symlink: the run log keys each data file by the path the user reached it by (absolute,
    the symlink kept), one form in the log, the tables and this test; its sha256 is the real file's."""
    import hashlib

    from olakit.cli import main

    link = tmp_path / "shared-link"
    link.symlink_to(data_dir, target_is_directory=True)
    monkeypatch.setenv("OLAKIT_DATA_DIR", str(link))
    monkeypatch.chdir(tmp_path)
    scripted(monkeypatch, "numbers")
    argv = ["run", "--dataset", "gsm8k/test.jsonl", "-n", "2", "--templates", "ST", "--strategies", "zero-shot"]
    assert main([*argv, "--out", "gsm"]) == 0
    log = json.loads((tmp_path / "gsm" / "run.json").read_text())
    reached = str(link / "gsm8k" / "test.jsonl")
    assert list(log["data"]) == [reached], log["data"]
    assert log["data"][reached] == hashlib.sha256((data_dir / "gsm8k" / "test.jsonl").read_bytes()).hexdigest()


def test_olakit_run_and_review_on_files_of_ones_own(tmp_path, monkeypatch, capsys):
    """A multiple-choice CSV with its mapping given as a flag, and a yes/no file for the review loop."""
    from olakit.cli import main
    from olakit.data.records import load_records

    csv = tmp_path / "quiz.csv"
    csv.write_text("prompt,w,x,y,z,key\nFirst?,a,b,c,d,x\nSecond?,a,b,c,d,z\n")
    scripted(monkeypatch, "steady")  # always "B"
    flags = ["--dataset", str(csv), "--dataset-map", "question=prompt,choices=w|x|y|z,answer=key"]
    assert main(["run", *flags, "--templates", "turbo", "--strategies", "zero-shot", "--out", str(tmp_path / "q")]) == 0
    df = load_records(tmp_path / "q" / "records.parquet")
    turbo = df[df["template"] == "turbo"]
    assert list(turbo["gold"]) == ["x", "z"] and list(turbo["extracted"]) == [None, None]  # "B" is not a label here
    assert set(turbo["unparsed_cause"]) == {"not_an_option"}
    rows = [
        {"qid": "a", "question": "Is ice cold?", "answer": True},
        {"qid": "b", "question": "Fish fly?", "answer": False},
    ]
    yes_no = write_jsonl(tmp_path / "facts.jsonl", rows)
    capsys.readouterr()
    assert main(["review", "--dataset", str(yes_no), "--max-iterations", "1", "--out", str(tmp_path / "r")]) == 0
    rv = load_records(tmp_path / "r" / "records.parquet")
    direct = rv[rv["loop"] == "direct"].set_index("question_id")
    assert direct.loc["a", "extracted"] == "yes" and bool(direct.loc["a", "correct"]) and not direct.loc["b", "correct"]
    assert main(["run", "--dataset", str(tmp_path / "quiz.csv"), "--out", str(tmp_path / "x")]) == 2  # no mapping
    assert "a layout olakit does not recognise (fields: key, prompt, w, x, y, z)" in capsys.readouterr().err


def test_a_free_text_file_is_refused_by_olagpt_before_any_call(tmp_path, monkeypatch, capsys):
    from olakit.cli import main

    scripted(monkeypatch, "fail")
    path = write_jsonl(tmp_path / "open.jsonl", [{"question": "Why is the sky blue?", "answer": "Rayleigh scattering"}])
    assert main(["run", "--dataset", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "1 question(s) with a free-text answer (first: 0)" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_notebook_runs_on_a_dataset_file_through_papermill(tmp_path, monkeypatch):
    """The template-count ablation on 3 GSM8K questions, live (scripted): the dataset is a setting like any other."""
    from tests.test_notebook import manifest, run

    scripted(monkeypatch, "numbers")
    out, _ = run("template_count.ipynb", tmp_path, source="live", dataset="gsm8k/test.jsonl", n_questions=3,
                 strategies="zero-shot", max_tokens=32)  # fmt: skip
    counts = pd.read_csv(out / "tables" / "template_count.csv")
    assert set(counts["k"]) == {1, 2, 3, 4, 5} and counts["mean"].round(6).eq(round(1 / 3, 6)).all()  # q0 right
    log = manifest(out)
    assert log["config"]["dataset"] == "gsm8k/test.jsonl" and log["outputs"]["records"]["questions"] == 3


def test_the_question_explorer_shows_a_dataset_files_questions(tmp_path, monkeypatch):
    """The explorer finds a file's questions through the run log (the records name the dataset, not the file)."""
    from olakit.cli import main
    from olakit.notebook.explorers.questions import open_explorers

    scripted(monkeypatch, "numbers")
    out = tmp_path / "gsm"
    assert (
        main(["run", "--dataset", "gsm8k/test.jsonl", "-n", "2", "--strategies", "zero-shot", "--out", str(out)]) == 0
    )
    explorer, heatmap = open_explorers(out / "records.parquet", tmp_path / "notes.jsonl")
    html = explorer.render()
    assert "Janet" in html and "<b>gold</b>: 18" in html and "<b>regex vote</b>: 18" in html


def test_geek_on_a_yes_no_file_with_its_own_facts_as_the_corpus(tmp_path, monkeypatch, capsys):
    """`olakit geek --dataset FILE --corpus dataset-facts:oracle`: the facts field of a recognised yes/no file is
    kept with each question and becomes the corpus; a file that is not yes/no is refused before any call."""
    from olakit.cli import main
    from olakit.data.records import load_records

    rows = [
        {"qid": "ice", "question": "Is ice colder than steam?", "answer": True, "facts": ["Ice is frozen water."]},
        {"qid": "fish", "question": "Can a trout fly?", "answer": False, "facts": ["Trout live in water."]},
    ]
    path = write_jsonl(tmp_path / "mine.jsonl", rows)
    scripted(monkeypatch, "albany")
    argv = ["geek", "--dataset", str(path), "--corpus", "dataset-facts:oracle", "--rows", "zero-shot,+RE", "--k", "1"]
    assert main([*argv, "--out", str(tmp_path / "g")]) == 0
    df = load_records(tmp_path / "g" / "records.parquet")
    assert sorted(df["question_id"].unique()) == ["fish", "ice"] and set(df["row"]) == {"zero-shot", "+RE"}
    assert set(df["dataset"]) == {"mine"} and set(df["extracted"]) <= {"yes", "no", None}
    retrieved = [s for t in df["trace"] for b in json.loads(t)["branches"] for s in b["steps"] if s.get("retrieved")]
    assert retrieved and {r[0][0] for r in (s["retrieved"] for s in retrieved)} <= {"ice-0", "fish-0"}
    numeric = write_jsonl(tmp_path / "num.jsonl", [{"question": "How many?", "answer": 3}])
    capsys.readouterr()
    assert main(["geek", "--dataset", str(numeric), "--out", str(tmp_path / "n")]) == 2
    assert "GEEK answers yes/no questions; 0 is not one" in capsys.readouterr().err


def test_a_notes_library_from_a_files_own_rationales_then_a_run_with_it(tmp_path, monkeypatch):
    """The active-learning path on GSM8K: the questions answered wrong every time (all but the first: the scripted
    model says 18) get notes whose explanation is the file's worked solution; a retrieval run then shows them."""
    from olakit.cli import main
    from olakit.data.records import load_records
    from olakit.olagpt.notes import NotesLibrary

    scripted(monkeypatch, "numbers")
    lib = tmp_path / "gsm_notes"  # a notes build's folder: its notes.jsonl, records and run log
    assert main(["notes", "build", "--dataset", "gsm8k/test.jsonl", "--pool", "4", "--r", "2", "--out", str(lib)]) == 0
    notes = NotesLibrary.load(lib / "notes.jsonl").notes
    assert [n.id for n in notes] == ["gsm8k:1", "gsm8k:2", "gsm8k:3"]  # gsm8k:0's gold is 18: never wrong
    assert notes[0].answer == "3" and notes[0].explanation.startswith("It takes 2/2=") and notes[0].options == {}
    argv = ["run", "--dataset", "gsm8k/test.jsonl", "-n", "1", "--offset", "10", "--templates", "ST"]
    argv += ["--strategies", "retrieval", "--n-notes", "1", "--library", str(lib), "--out", str(tmp_path / "r")]
    assert main(argv) == 0
    rec = load_records(tmp_path / "r" / "records.parquet").query("template == 'ST'").iloc[0]
    assert len(rec["note_ids"]) == 1 and rec["note_ids"][0] in {"gsm8k:1", "gsm8k:2", "gsm8k:3"}


EMBEDDED_READINGS = {
    # question id: the number each output states as its answer, read by hand from tests/data/gsm8k_embedded_outputs
    # (the embedded Qwen2.5-Coder-0.5B's outputs on GSM8K test 0-31: ST, zero-shot, greedy, max_tokens 320, made by
    # `olakit run --dataset gsm8k/test.jsonl -n 32 --templates ST --strategies zero-shot --max-tokens 320`)
    "0": None,  # cut off in step 5, before any answer
    "1": "3",  # "Answer: 3"
    "2": None,  # 'The answer is: {"profit": 30000}': a JSON key other than Answer; unsure, so unparsed
    "3": None,  # "\boxed{a number}": the format sentence echoed, no number
    "4": "10",  # "\boxed{10} cups"
    "5": "48",
    "6": "100",
    "7": "400",
    "8": "575",  # "\boxed{575} miles from home at" (cut off after the statement)
    "9": "18480",
    "10": None,  # ends "... over the three months is 366." with no answer statement (366 is right; not guessed)
    "11": None,  # cut off inside a code block
    "12": None,  # cut off inside "\frac{12"
    "13": None,  # cut off inside an equation
    "14": "0.2",  # "\boxed{0.2}"
    "15": None,  # cut off
    "16": "500",  # "the answer is \(500\)" then "Answer: 500"
    "17": None,  # "Answer: 50 * 50 * 35 * 15": an unevaluated expression, not a number (once read as 50)
    "18": "48",
    "19": "4",  # "\[ \boxed{4} \]"
    "20": None,  # cut off
    "21": "23",
    "22": "7",
    "23": "5",  # "the answer is 5 centimeters shorter ..." then "Answer: 5"
    "24": "15",  # "\boxed{15.00}"
    "25": "29",
    "26": "242",  # "Answer: 242.00"
    "27": "14400",
    "28": "35",
    "29": "99",
    "30": "162",
    "31": "63.33",  # "\boxed{63.33}"
}


def test_the_number_reader_on_the_embedded_models_gsm8k_outputs():
    """32 real outputs, each reading worked out by hand above; scored against the file's gold: 2 right (1, 22)."""
    path = Path(__file__).parent / "data" / "gsm8k_embedded_outputs.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["question_id"] for r in rows] == list(EMBEDDED_READINGS)
    read = get_extractor("strict")
    assert {r["question_id"]: read(r["output"], []) for r in rows} == EMBEDDED_READINGS
    right = [r["question_id"] for r in rows if EMBEDDED_READINGS[r["question_id"]] == r["gold"]]
    assert right == ["1", "22"]


def test_a_dataset_file_is_a_sweep_key_like_any_setting(tmp_path):
    from olakit.notebook.sweep import expand, load_spec

    spec = tmp_path / "s.yaml"
    spec.write_text(
        "notebooks:\n  - notebook: notebooks/template_count.ipynb\n    parameters: {source: live, n_questions: 2}\n"
        "    grid: {dataset: [aqua, gsm8k/test.jsonl], dataset_map: [null]}\n"
    )
    jobs = expand(load_spec(spec), "r", tmp_path, tmp_path)
    assert [j.parameters["dataset"] for j in jobs] == ["aqua", "gsm8k/test.jsonl"]
    spec.write_text("notebooks:\n  - notebook: notebooks/template_count.ipynb\n    grid: {dataset: [gsm8k]}\n")
    with pytest.raises(ConfigError, match=r"dataset='gsm8k': not a built-in dataset \(aqua, ekar_zh, strategyqa\)"):
        load_spec(spec)


def test_records_of_a_file_that_changed_since_are_refused_not_mixed(tmp_path, monkeypatch):
    from olakit.cli import main
    from olakit.notebook.explorers.questions import open_explorers

    path = write_jsonl(
        tmp_path / "sums.jsonl", [{"question": "2 + 16?", "answer": 18}, {"question": "1+2?", "answer": 3}]
    )
    scripted(monkeypatch, "numbers")
    out = tmp_path / "r"
    assert (
        main(["run", "--dataset", str(path), "--strategies", "zero-shot", "--templates", "turbo", "--out", str(out)])
        == 0
    )
    open_explorers(out / "records.parquet", tmp_path / "n.jsonl")  # the same file: fine
    write_jsonl(
        path, [{"question": "2 + 16?", "answer": 18}, {"question": "1 + 3?", "answer": 4}]
    )  # question 1 changed
    with pytest.raises(DataError, match=r"sums.jsonl: not the file the run read \(sha256 \w+, the run's \w+"):
        open_explorers(out / "records.parquet", tmp_path / "n.jsonl")


def test_an_answer_of_1_or_0_is_a_number_not_yes_or_no(tmp_path):
    """`answer: 1` was recognised as yes/no (a set-precedence slip) and then refused as "not yes/no"."""
    (q,) = load_file(write_jsonl(tmp_path / "one.jsonl", [{"question": "How many?", "answer": 1}]))
    assert (q.kind, q.gold) == ("number", "1")


def test_free_text_answers_are_scored_by_normalised_exact_match_unless_a_judge_is_asked_for(tmp_path, monkeypatch):
    """The review loop on a free-text file. By default the answer each output states, normalised, must equal the
    reference: a last-letters answer "WEtj" against gold "yajo" once counted right (the embedded model judged its own
    answers: accuracy 1.0). A model judge is opt-in (--free-text judge), its verdict the record's, and named in the
    table and the log."""
    import pandas as pd

    from olakit.cli import main
    from olakit.data.records import load_records

    rows = [{"id": "wrong", "question": "Take the last letters of: Daniel Bruce Wyatt Raj", "answer": "yajo"},
            {"id": "right", "question": "Take the last letters of: Kelly Mario Rita Jo", "answer": "yoao"}]  # fmt: skip
    path = write_jsonl(tmp_path / "letters.jsonl", rows)
    monkeypatch.setenv("OLAKIT_BASE_URL", "scripted://tests.replies:last_letters")
    monkeypatch.setenv("OLAKIT_MODEL", "scripted")
    assert main(["review", "--dataset", str(path), "--max-iterations", "1", "--out", str(tmp_path / "exact")]) == 0
    df = load_records(tmp_path / "exact" / "records.parquet")
    direct = df[df["loop"] == "direct"].set_index("question_id")
    assert direct.loc["wrong", "extracted"] == "wetj" and not direct.loc["wrong", "correct"]
    assert direct.loc["right", "extracted"] == "yoao" and bool(direct.loc["right", "correct"])  # "Answer: YoAo."
    log = json.loads((tmp_path / "exact" / "run.json").read_text())
    assert "judge" not in log["roles"] and log["extra"]["scored_by"] == "exact match (normalised)"
    table = pd.read_csv(tmp_path / "exact" / "tables" / "iteration_accuracy.csv")
    assert set(table["scored_by"]) == {"exact match (normalised)"} and set(table["accuracy"]) == {0.5}
    # a judge asked for: every answer (direct and each iteration) goes to the judge role with the reference
    monkeypatch.setenv("OLAKIT_JUDGE_BASE_URL", "scripted://tests.replies:grader")
    monkeypatch.setenv("OLAKIT_JUDGE_MODEL", "grader")
    argv = ["review", "--dataset", str(path), "--max-iterations", "1", "--free-text", "judge"]
    assert main([*argv, "--out", str(tmp_path / "judged")]) == 0
    df = load_records(tmp_path / "judged" / "records.parquet")
    log = json.loads((tmp_path / "judged" / "run.json").read_text())
    assert log["roles"]["judge"]["model"] == "grader" and log["calls"]["judge"]["requests"] == len(df)
    assert log["extra"]["scored_by"] == "judge: grader"
    table = pd.read_csv(tmp_path / "judged" / "tables" / "iteration_accuracy.csv")
    assert set(table["scored_by"]) == {"judge: grader"}
