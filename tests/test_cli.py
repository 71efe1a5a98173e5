"""The CLI end to end on the real recorded data, and numbers that follow the files."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from olakit.analysis.reproduce import reproduce_olagpt
from olakit.errors import DataError, UnknownNameError
from olakit.settings import Analysis

STRATEGY_FILES = {
    "zero-shot": "",
    "random": "_few_shot_random",
    "retrieval": "_few_shot_retrieval",
    "combine": "_few_shot_combine",
}


def count_correct(data_dir, folder, suffix):
    """Independent count: the authors' regex straight over their file, against aqua/test.json."""
    gold = [json.loads(line)["correct"] for line in (data_dir / "aqua/test.json").read_text().splitlines() if line]
    preds = json.loads((data_dir / f"olagpt/data/predictions/{folder}/aqua_predict{suffix}.json").read_text())
    pattern = re.compile(r"\{*?.*?[Aa]nswer[^A-Z]*?([A-F])[^a-zA-Z]+")
    hits = 0
    for p in preds["predictions"]:
        m = pattern.search(p["output"])
        hits += bool(m) and m.group(1) == gold[p["question_id"]]
    return hits


def olakit(*args):
    return subprocess.run([sys.executable, "-m", "olakit.cli", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_reproduce_cli_end_to_end(tmp_path, data_dir):
    out = tmp_path / "out"
    r = olakit("reproduce-olagpt", "--data-dir", str(data_dir), "--out", str(out), "--n-boot", "200")
    assert r.returncode == 0, r.stderr
    assert (out / "records.parquet").is_file()
    for name in (
        "accuracy",
        "accuracy_ci",
        "consistency",
        "bounds",
        "extraction",
        "precision",
        "template_count",
        "paper_comparison",
    ):
        assert (out / "tables" / f"{name}.csv").stat().st_size > 0
    for name in ("fig6_template_count", "fig7_before_after_voting", "fig12_agreement_heatmaps"):
        assert (out / "figures" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (out / "figures" / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
    log = json.loads((out / "run.json").read_text())
    assert log["door"] == "reproduce-olagpt" and log["extra"]["source"] == "olagpt-recorded"
    assert log["outputs"]["records"]["rows"] == len(pd.read_parquet(out / "records.parquet"))
    assert log["parameters"]["extractor"] == "olagpt" and log["analysis"]["n_boot"] == 200
    assert log["config_type"] == "Analysis" and log["analysis"] == log["config"] and log["config"]["tie"] == "first"
    assert log["packages"]["pandas"] and set(log["outputs"]["figures"]) >= {
        "fig6_template_count",
        "fig12_agreement_heatmaps",
    }
    assert {Path(p).name for p in log["data"]} >= {"aqua_predict.json", "test.json"}  # the data files read, hashed
    assert all(len(h) == 64 for h in log["data"].values())
    acc = pd.read_csv(out / "tables" / "accuracy.csv", index_col=0)
    assert list(acc.columns) == ["zero-shot", "random", "retrieval", "combine"]
    assert list(acc.index) == ["DST", "DT", "PT", "ST", "turbo", "regex_vote", "llm_vote"]
    assert log["config"]["unparsed"] == "raw"
    assert log["kind"] == "reproduction" and log["extra"]["templates"] == ["DT", "DST", "PT", "ST", "turbo"]
    for folder, template in (("st", "ST"), ("turbo", "turbo"), ("dst", "DST")):
        for strategy, suffix in STRATEGY_FILES.items():
            assert acc.loc[template, strategy] == pytest.approx(count_correct(data_dir, folder, suffix) / 254)
    ext = pd.read_csv(out / "tables" / "extraction.csv")
    assert ext["n"].eq(254).all() and len(ext) == 24  # 5 templates and the LLM vote x 4 strategies


@pytest.mark.slow
def test_cli_errors_are_one_line_and_write_nothing(tmp_path, data_dir):
    out = tmp_path / "out"
    r = olakit("reproduce-olagpt", "--data-dir", str(data_dir), "--out", str(out), "--extractor", "fuzzy")
    assert (
        r.returncode == 2 and "olakit: error: unknown extractor 'fuzzy'; known: olagpt, option_mark, strict" in r.stderr
    )
    assert "Traceback" not in r.stderr and not out.exists()
    r = olakit("reproduce-olagpt", "--data-dir", str(tmp_path / "nowhere"), "--out", str(out))
    assert r.returncode == 2 and "nowhere does not exist" in r.stderr and not out.exists()
    r = olakit("reproduce-olagpt", "--data-dir", str(data_dir), "--out", str(out), "--tie", "coin")
    assert r.returncode == 2 and "Analysis: tie='coin': input should be 'first', 'random' or 'none'" in r.stderr
    assert not out.exists()
    r = olakit("reproduce-olagpt", "--out", str(out), "--preset", "paper", "--unparsed", "abstain")
    assert r.returncode == 2 and "preset 'paper' sets unparsed='raw' but unparsed='abstain'" in r.stderr
    r = olakit("reproduce-olagpt", "--out", str(out), "--order", "paper")
    assert r.returncode == 2 and "unrecognized arguments: --order paper" in r.stderr and not out.exists()


@pytest.fixture
def data_copy(tmp_path, data_dir):
    """A writable copy of the files reproduce_olagpt reads."""
    copy = tmp_path / "data"
    shutil.copytree(data_dir / "aqua", copy / "aqua")
    shutil.copytree(data_dir / "olagpt/data/predictions", copy / "olagpt/data/predictions")
    return copy


def reproduce(data, out, **settings):
    """The reproduction as `olakit reproduce-olagpt` makes it: the Result, its report, written into ``out``."""
    from olakit.analysis.report import report
    from olakit.analysis.reproduce import draw_figures

    result = reproduce_olagpt(data, **settings)
    tables = report(result)
    return result.write(out, tables, draw_figures(tables)), tables


@pytest.mark.slow
def test_tables_follow_the_recorded_files(tmp_path, data_copy):
    first = reproduce(data_copy, tmp_path / "a", analysis=Analysis(n_boot=50))[1]["accuracy"]
    path = data_copy / "olagpt/data/predictions/st/aqua_predict.json"
    doc = json.loads(path.read_text())
    gold = [json.loads(line)["correct"] for line in (data_copy / "aqua/test.json").read_text().splitlines() if line]
    wrong = [
        p
        for p in doc["predictions"]
        if not re.search(rf"[Aa]nswer[^A-Z]*?{gold[p['question_id']]}[^a-zA-Z]", p["output"])
    ]
    flipped = wrong[:3]
    for p in flipped:
        p["output"] = f"Reasoning.\n{{Answer: {gold[p['question_id']]}}}\n"
    path.write_text(json.dumps(doc))
    second = reproduce(data_copy, tmp_path / "b", analysis=Analysis(n_boot=50))[1]["accuracy"]
    assert second.loc["ST", "zero-shot"] - first.loc["ST", "zero-shot"] == pytest.approx(3 / 254)
    unchanged = second.drop(index=["ST", "regex_vote"])
    pd.testing.assert_frame_equal(unchanged, first.drop(index=["ST", "regex_vote"]))
    assert second.loc["ST", "random"] == first.loc["ST", "random"]


def test_bad_prediction_file_names_file_and_line_and_leaves_output_alone(tmp_path, data_copy):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("earlier results")
    path = data_copy / "olagpt/data/predictions/pt/aqua_predict_few_shot_random.json"
    path.write_text(path.read_text()[:5000])  # truncated mid-file
    with pytest.raises(DataError, match=r"pt/aqua_predict_few_shot_random\.json line \d+: malformed JSON"):
        reproduce(data_copy, out)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_recorded_llm_vote_in_another_candidate_order_is_refused(tmp_path, data_copy):
    path = data_copy / "olagpt/data/predictions/cos_llm_vote/dst_dt_pt_st_turbo/aqua_predict_few_shot_combine.json"
    doc = json.loads(path.read_text())
    cands = doc["predictions"][4]["candidate_outputs"]
    cands[0], cands[1] = cands[1], cands[0]
    path.write_text(json.dumps(doc))
    with pytest.raises(DataError, match=r"prediction 4: candidates in the order \['dst', 'dt', 'pt', 'st', 'turbo'\]"):
        reproduce(data_copy, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_prediction_with_wrong_gold_is_refused(tmp_path, data_copy):
    path = data_copy / "olagpt/data/predictions/dt/aqua_predict.json"
    doc = json.loads(path.read_text())
    doc["predictions"][7]["answer"] = "Z)nothing"
    path.write_text(json.dumps(doc))
    with pytest.raises(DataError, match=r"dt/aqua_predict\.json prediction 7: answer 'Z\)nothing' disagrees"):
        reproduce(data_copy, tmp_path / "out")
    with pytest.raises(UnknownNameError):
        reproduce(data_copy, tmp_path / "out", extractor="nope")


@pytest.mark.slow
def test_run_cli_with_verification_diy_and_template_choice(tmp_path):
    """`olakit run` end to end against a scripted endpoint, every flag of the OlaGPT extensions on."""
    import os

    env = {
        **os.environ,
        "OLAKIT_BASE_URL": "scripted://tests.replies:steady",  # the command reaches it as an endpoint, no server
        "OLAKIT_MODEL": "scripted",
        "OLAKIT_CACHE_DIR": str(tmp_path / "cache"),
    }
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "olakit.cli",
            "run",
            "-n",
            "2",
            "--templates",
            "turbo,ST",
            "--strategies",
            "zero-shot",
            "--baselines",
            "",
            "--votes",
            "regex_vote",
            "--verify",
            "--diy",
            "--choose-k",
            "1",
            "--choice-comparison",
            "--max-tokens",
            "16",
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("planned: up to ")  # the plan comes first (verification's revisions: a ceiling)
    for name in ("methods", "verification", "template_choice", "usage"):
        assert (tmp_path / "out" / "tables" / f"{name}.csv").is_file(), name
    methods = pd.read_csv(tmp_path / "out" / "tables" / "methods.csv")
    assert {"DIY", "chosen_vote", "verified_vote", "turbo+V", "ST+V"} <= set(methods["method"])


@pytest.mark.parametrize(
    "command",
    [
        ("run", "-n", "1", "--templates", "turbo", "--strategies", "zero-shot"),
        ("geek", "-n", "1", "--rows", "zero-shot,+RE"),
        ("review", "-n", "1"),
        ("reproduce-olagpt",),
    ],
    ids=lambda c: c[0],
)
def test_an_output_path_that_is_a_file_is_refused_before_any_call(tmp_path, command):
    """Every command checks where it will write before its first call (`olakit geek --out FILE` once paid 11
    calls, then failed with a FileExistsError traceback)."""
    import os

    from olakit.llm.loopback import Loopback

    taken = tmp_path / "taken.txt"
    taken.write_text("a user's file\n")
    with Loopback() as srv:
        env = {**os.environ, "OLAKIT_BASE_URL": srv.base_url, "OLAKIT_MODEL": "loopback"}
        r = subprocess.run(
            [sys.executable, "-m", "olakit.cli", *command, "--out", str(taken)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert srv.requests == 0
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"--out {taken}: a file is there; give a directory" in r.stderr
    assert taken.read_text() == "a user's file\n"


def test_counts_on_the_terminal_agree_with_their_number():
    """ "1 questions" in `olakit geek`'s summary (and the explorers' counts) came from a bare f-string."""
    from olakit.names import plural

    assert [plural(n, "question") for n in (0, 1, 2, 1500)] == [
        "0 questions",
        "1 question",
        "2 questions",
        "1,500 questions",
    ]


@pytest.mark.slow
def test_the_terminal_shows_one_bar_per_geek_row_and_no_library_logs(tmp_path):
    """`olakit geek` once drew a progress bar per round (32 for one question); `olakit run` printed faiss's INFO
    lines and its call summary twice."""
    import os

    from olakit.llm.loopback import Loopback
    from tests import replies
    from tests.test_geek import PARAGRAPHS

    corpus = tmp_path / "albany.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in PARAGRAPHS))
    # the bars are the cached client's (one per batch): this one is about the real client, through HTTP
    with Loopback(reply=replies.albany) as srv:
        env = {**os.environ, "OLAKIT_BASE_URL": srv.base_url, "OLAKIT_MODEL": "loopback"}
        geek = subprocess.run(
            [sys.executable, "-m", "olakit.cli", "geek", "-n", "1", "--rows", "+De,Full", "--corpus", str(corpus),
             "--branches", "2", "--out", str(tmp_path / "g")],
            capture_output=True, text=True, timeout=300, env=env,
        )  # fmt: skip
        run = subprocess.run(
            [sys.executable, "-m", "olakit.cli", "run", "-n", "1", "--templates", "turbo", "--strategies",
             "zero-shot,retrieval", "--max-tokens", "16", "--out", str(tmp_path / "r")],
            capture_output=True, text=True, timeout=300, env=env,
        )  # fmt: skip
    assert geek.returncode == 0 and run.returncode == 0, geek.stderr[-2000:] + run.stderr[-2000:]
    bars = {m for m in re.findall(r"(GEEK [^:\r\n]*):", geek.stderr)}
    assert bars == {"GEEK +De", "GEEK Full"}, geek.stderr[-2000:]
    assert not re.search(r"round \d+[^\n\r]*\d+%\|", geek.stderr)  # no bar of a round's own
    assert "round 1: 1 call, 0 made before" in geek.stderr  # the row's bar says each round as it starts
    assert "GEEK on " in geek.stdout and "1 question\n" in geek.stdout
    for out in (geek, run):
        logged = [ln for ln in out.stderr.splitlines() if re.match(r"(INFO|DEBUG|WARNING) |[\w.]+: (info|debug)", ln)]
        assert logged == [], logged  # no log-format line: olakit's are sentences, other libraries' only warnings
    assert run.stdout.count("calls: ") == 1 and "calls:" not in run.stderr  # the call summary, once
    assert "calls: 3 made (3 paid, 0 from the cache, 0 failed)" in run.stdout
