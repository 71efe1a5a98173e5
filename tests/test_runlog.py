"""One run for every door: no failed call becomes data, and every result says how it was made (olakit.runner,
olakit.runlog). The front doors are reached through scripted endpoints (``scripted://tests.replies:NAME``), as a
user's command reaches a real one; HTTP-specific behaviour (system_fingerprint) through the loopback server."""

import json
import shlex

import pandas as pd
import pytest

from olakit.cli import main
from olakit.geek.config import GeekConfig
from olakit.llm import Endpoint, ScriptedModel
from olakit.llm.answerer import CallsFailed
from olakit.olagpt.active_learning import build_notes
from olakit.olagpt.config import NotesConfig, OlaGPTConfig
from olakit.olagpt.run import run
from olakit.review.config import ReviewConfig
from olakit.review.run import run_review
from olakit.runlog import command, history, read_log
from tests import replies

TINY = ["-n", "2", "--templates", "turbo,ST", "--strategies", "zero-shot", "--max-tokens", "16"]


@pytest.fixture
def scripted(monkeypatch):
    """Point the configured endpoint (or one role's) at a reply function of tests/replies.py."""

    def point(name: str, role: str | None = None):
        prefix = f"OLAKIT_{role.upper()}_" if role else "OLAKIT_"
        monkeypatch.setenv(f"{prefix}BASE_URL", f"scripted://tests.replies:{name}")
        monkeypatch.setenv(f"{prefix}MODEL", f"scripted-{name}")

    return point


# ---- no failed call becomes data: each path that turned one into data, with a model whose calls fail


def test_notes_build_with_failing_calls_is_refused_and_writes_nothing(tmp_path, scripted, capsys):
    """It exited 0 with "3 notes from 3 pool questions written": every question went into the error book as wrong
    every time."""
    scripted("fail")
    out = tmp_path / "notes"
    code = main(["notes", "build", "--dataset", "aqua", "--split", "dev", "--pool", "3", "--r", "2", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "calls (answerer: question types) failed after retries" in err, err
    assert "500 internal error (scripted)" in err and "only the missing calls are made" in err
    assert list(tmp_path.iterdir()) == []


def test_llm_written_notes_whose_calls_fail_are_refused(tmp_path):
    """write_notes(explainer="llm") saved a failed call as an empty explanation."""

    def reply(prompt, request):
        if prompt.startswith("You are an expert teacher"):
            raise RuntimeError("503 overloaded")
        return '{"Answer": "Z"}' if "choices" in prompt.lower() else "algebra"  # wrong every time

    cfg = NotesConfig(dataset="aqua", split="dev", pool=2, r=1, explainer="llm")
    with pytest.raises(CallsFailed, match=r"2 of 2 calls \(answerer: writing notes\) failed.*503 overloaded"):
        build_notes(cfg, llm=ScriptedModel(reply))


def test_a_failed_second_answer_stage_of_the_review_loop_is_refused(tmp_path):
    """run_review counted the failure (calls["answerer"]["failed"] == 1) and wrote 3 records with unparsed answers."""
    cfg = ReviewConfig(dataset="aqua", n_questions=1, max_iterations=1, answer_stages=2, max_tokens=16)
    with pytest.raises(CallsFailed, match=r"calls \(answerer: second-stage answers\) failed"):
        run_review(cfg, ScriptedModel(replies.fail_second_stage))


def test_roles_without_an_endpoint_of_their_own_use_the_model_the_run_was_given(monkeypatch):
    """Given one scripted model, the review loop's reviewer and direct roles went to the embedded model (their
    endpoint from an empty environment), 12 s of real generation in a test about the loop."""
    cfg = ReviewConfig(dataset="aqua", n_questions=1, max_iterations=1, max_tokens=16)
    log = run_review(cfg, ScriptedModel(replies.steady)).log
    assert {r: e.model for r, e in log.roles.items()} == dict.fromkeys(["answerer", "reviewer", "direct"], "scripted")
    monkeypatch.setenv("OLAKIT_REVIEWER_BASE_URL", "scripted://tests.replies:steady")
    monkeypatch.setenv("OLAKIT_REVIEWER_MODEL", "own-reviewer")  # a role's own endpoint still wins
    log = run_review(cfg, ScriptedModel(replies.steady)).log
    assert log.roles["reviewer"].model == "own-reviewer" and log.roles["direct"].model == "scripted"


def test_a_failed_llm_vote_over_recorded_answers_is_refused(olagpt_records, scripted):
    """The notebook LLM vote (raw LLM()) dropped a failed question's vote, so the row's n shrank."""
    from olakit.notebook.records import add_llm_vote, get_records

    scripted("fail")
    cfg = OlaGPTConfig(n_questions=3, strategies=["zero-shot"], votes=["regex_vote", "llm_vote"])
    recorded = get_records("recorded", cfg)
    with pytest.raises(CallsFailed, match=r"calls \(answerer: LLM votes\) failed"):
        add_llm_vote(recorded, cfg, 2)


def test_the_geek_judge_and_the_open_question_judge_refuse_failed_calls(tmp_path, scripted):
    """A failed judge call was an "unclear" verdict in the shares."""
    from olakit.notebook.records import geek_records, open_judgement

    scripted("steady")
    scripted("fail", role="judge")
    with pytest.raises(CallsFailed, match=r"calls \(judge: pairwise judge\) failed"):
        open_judgement(1, ReviewConfig(max_iterations=1, max_tokens=16))
    cfg = GeekConfig(n_questions=1, rows=["+De"], max_steps=3)
    with pytest.raises(CallsFailed, match=r"calls \(judge: pairwise judge\) failed"):
        geek_records(cfg, judge_questions=1)


# ---- one run log, from every door


def _frame(path) -> pd.DataFrame:
    df = pd.read_parquet(path)
    return (
        df.drop(columns=["latency", "cached"], errors="ignore").sort_values(list(df.columns[:6])).reset_index(drop=True)
    )


def test_a_run_is_made_again_from_its_log(tmp_path, scripted, capsys, monkeypatch):
    """`olakit again` turns run.json back into the command; running it gives the same records."""
    scripted("steady")
    first = tmp_path / "first"
    assert main(["run", *TINY, "--answer-stages", "2", "--out", str(first)]) == 0
    log = read_log(first)
    assert log.door == "run" and log.config_type == "OlaGPTConfig" and log.config["answer_stages"] == 2
    assert log.roles["answerer"].model == "scripted-steady" and log.calls["answerer"].failed == 0
    assert log.analysis["vote_order"] == "paper" and log.analysis["n_boot"] == 2000
    assert "accuracy" in log.outputs["tables"] and log.outputs["records"]["rows"] == 4
    assert any(p.endswith("aqua/test.json") for p in log.data) and log.packages["pandas"]
    capsys.readouterr()
    assert main(["again", str(first), "--out", str(tmp_path / "second")]) == 0
    words = shlex.split(capsys.readouterr().out.strip())
    assert words[:2] == ["olakit", "run"]
    monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "empty-cache"))  # made again, not read back
    assert main(words[1:]) == 0
    pd.testing.assert_frame_equal(_frame(first / "records.parquet"), _frame(tmp_path / "second" / "records.parquet"))
    assert read_log(tmp_path / "second").identity == log.identity


@pytest.mark.parametrize(
    "door",
    [
        ["geek", "-n", "1", "--rows", "zero-shot", "--max-steps", "2"],
        ["review", "-n", "1", "--max-iterations", "1", "--max-tokens", "16"],
    ],
    ids=lambda d: d[0],
)
def test_geek_and_review_write_the_same_run_log(tmp_path, scripted, door, capsys):
    scripted("steady")
    out = tmp_path / "out"
    assert main([*door, "--out", str(out)]) == 0
    if door[0] == "review":  # the table printed had lost its iteration column
        assert "iteration" in capsys.readouterr().out.splitlines()[0]
    log = read_log(out)
    assert log.door == door[0] and log.config_type in ("GeekConfig", "ReviewConfig")
    assert log.outputs["records"]["rows"] == len(pd.read_parquet(out / "records.parquet"))
    assert log.outputs["tables"] and all((out / "tables" / f"{t}.csv").is_file() for t in log.outputs["tables"])
    assert set(log.calls) >= {"answerer"} and log.total("failed") == 0
    assert command(log).startswith(f"olakit {door[0]} --out {out}")


def test_notes_build_writes_its_log_beside_the_library(tmp_path, scripted, capsys):
    scripted("steady")
    out = tmp_path / "lib"
    argv = ["notes", "build", "--dataset", "aqua", "--split", "dev", "--pool", "2", "--r", "1", "--out", str(out)]
    assert main(argv) == 0
    log = read_log(out)
    assert log.door == "notes build" and log.kind == "notes" and log.config["pool"] == 2
    assert log.extra["library"] == "notes.jsonl" and (out / "notes.jsonl").is_file()
    assert log.outputs["records"]["rows"] == 2  # the pool's answers: 2 questions answered once
    notes = log.extra["notes"]
    assert log.calls["answerer"].paid == 4 + notes  # 2 question types, 2 answers, and each note's check
    assert log.extra["checked"] == notes and log.extra["calls"]["checking notes"] == notes
    capsys.readouterr()
    assert main(["again", str(out), "--out", str(tmp_path / "again")]) == 0
    assert "olakit notes build --out" in capsys.readouterr().out


def test_a_folder_never_mixes_two_runs_and_keeps_each_runs_log(tmp_path, monkeypatch, capsys):
    """The README's CLI and Python examples both wrote results/live: the second replaced the records and left the
    first's tables; a warm rerun overwrote what the cold run had paid."""
    from olakit.llm.loopback import Loopback

    out = tmp_path / "live"
    with Loopback(reply=replies.steady) as srv:  # the real client and cache: the warm rerun pays nothing
        monkeypatch.setenv("OLAKIT_BASE_URL", srv.base_url)
        monkeypatch.setenv("OLAKIT_MODEL", "loopback")
        assert main(["run", *TINY, "--out", str(out)]) == 0
        assert main(["run", *TINY, "--out", str(out)]) == 0  # the same run again: allowed, served from the cache
    logs = history(out)
    assert [lg.calls["answerer"].paid for lg in logs] == [6, 0] and logs[0].run_id != logs[1].run_id
    before = (out / "records.parquet").read_bytes()
    capsys.readouterr()
    code = main(["run", "-n", "3", "--templates", "turbo", "--strategies", "zero-shot", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and f"{out} holds another run (run, OlaGPTConfig" in err and "give another output folder" in err
    assert (out / "records.parquet").read_bytes() == before and len(history(out)) == 2
    other = run(OlaGPTConfig(n_questions=1, strategies=["zero-shot"]), ScriptedModel(replies.steady))
    with pytest.raises(Exception, match="holds another run"):  # the Python door's writer refuses it too
        other.write(out)
    assert (out / "records.parquet").read_bytes() == before


def test_the_run_log_records_the_endpoints_system_fingerprint(tmp_path):
    from olakit.llm import LLM
    from olakit.llm.loopback import Loopback

    cfg = OlaGPTConfig(n_questions=1, templates=["turbo"], strategies=["zero-shot"], max_tokens=8)
    with Loopback(fingerprint="fp_abc123") as srv:
        for out in ("cold", "warm"):
            with LLM(Endpoint(srv.base_url, "fake"), cache_dir=tmp_path / "c", progress=False) as llm:
                log = run(cfg, llm).write(tmp_path / out).log
            assert log.roles["answerer"].system_fingerprints == ("fp_abc123",), out  # kept in the cache too
    assert log.calls["answerer"].paid == 0 and "api_key" not in json.dumps(log.as_dict()).lower()


# ---- one form for a setting at every door


def test_a_setting_takes_the_same_forms_at_every_door(scripted, capsys):
    """`--answer-stages 2` was refused ("input should be 1 or 2"); a sweep's `n_notes: 1` or papermill's
    `-p templates ST` was refused ("input should be a valid tuple") while `--n-notes 1` worked."""
    import argparse

    from olakit.config import add_arguments, from_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser, OlaGPTConfig)
    cli = from_arguments(
        OlaGPTConfig, parser.parse_args(["--answer-stages", "2", "--n-notes", "1", "--templates", "ST"])
    )
    sweep = OlaGPTConfig.from_mapping({"answer_stages": 2, "n_notes": 1, "templates": "ST"})  # YAML's scalars
    papermill = OlaGPTConfig.from_mapping({"answer_stages": "2", "n_notes": "1", "templates": "ST"})  # -p strings
    assert cli == sweep == papermill
    assert (cli.answer_stages, cli.n_notes, cli.templates) == (2, (1,), ("ST",))
    assert OlaGPTConfig(strategies="zero-shot,random").strategies == ("zero-shot", "random")
    assert ReviewConfig(answer_stages="2").answer_stages == 2
    with pytest.raises(Exception, match=r"answer_stages='3': input should be 1 or 2"):
        OlaGPTConfig(answer_stages="3")


def test_abbreviated_flags_are_refused(capsys):
    """`--n-note 1` started a 12-minute grid (argparse took it for --n-notes)."""
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--n-note", "1", "--out", "x"])
    assert exit_.value.code == 2 and "unrecognized arguments: --n-note" in capsys.readouterr().err


def test_help_is_whole_sentences(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "olakit: which prompting ideas make an LLM reason better (OlaGPT, GEEK, the CoT + self-review loop)." in out


def test_data_verify_checks_the_data_in_use(capsys, data_dir):
    """`olakit data verify` checked data/raw, not the data the runs read (../shared/data here)."""
    assert main(["data", "verify"]) == 0
    assert f"all files in {data_dir} match the manifest" in capsys.readouterr().out


def test_a_rerun_under_a_later_olakit_with_an_added_setting_is_the_same_run(tmp_path):
    """A second `make paper` after an upgrade refused every folder: the new config had settings (dataset_map,
    GEEK's dataset) the earlier logs lack. A setting only the later log has is not compared; a changed one is."""
    from olakit.errors import DataError
    from olakit.runlog import RunLog, claim_folder, log_text, same_run

    earlier = RunLog(door="notebook:geek_ablation", parameters={"n_questions": 2, "split": "dev", "k": 2})
    (tmp_path / "run.json").write_text(log_text(earlier))
    later = RunLog(door="notebook:geek_ablation", parameters={"n_questions": 2, "split": "dev", "k": 2,
                                                            "dataset": "strategyqa", "dataset_map": None})  # fmt: skip
    assert same_run(earlier, later) and not same_run(later, earlier)  # the earlier lacks what the later has
    claim_folder(tmp_path, later)  # no error
    changed = RunLog(door="notebook:geek_ablation", parameters={"n_questions": 3, "split": "dev", "k": 2})
    with pytest.raises(DataError, match="holds another run"):
        claim_folder(tmp_path, changed)
