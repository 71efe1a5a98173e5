"""olakit sweep: the file is checked, grids expand, live notebooks run in parallel through papermill sharing
one cache, each distinct prompt reaches the endpoint once, and a rerun is served from the cache."""

import json

import pytest

from olakit.errors import DataError
from olakit.notebook.sweep import expand, load_spec, run_sweep


def write(tmp_path, text):
    p = tmp_path / "sweep.yaml"
    p.write_text(text)
    return p


def test_spec_errors_say_what_and_where(tmp_path):
    with pytest.raises(DataError, match="needs a non-empty list 'notebooks'"):
        load_spec(write(tmp_path, "parallel: 2\n"))
    with pytest.raises(DataError, match=r"notebooks\[0\]: notebook notebooks/nope.ipynb not found"):
        load_spec(write(tmp_path, "notebooks:\n  - notebook: notebooks/nope.ipynb\n"))
    with pytest.raises(DataError, match=r"notebooks\[0\]: 'grid' must map parameter names to non-empty lists"):
        load_spec(write(tmp_path, "notebooks:\n  - notebook: notebooks/template_count.ipynb\n    grid: {seed: 1}\n"))
    with pytest.raises(DataError, match="out_dir is set by the sweep"):
        load_spec(
            write(tmp_path, "notebooks:\n  - notebook: notebooks/template_count.ipynb\n    parameters: {out_dir: x}\n")
        )
    with pytest.raises(DataError, match=r"unknown keys \['paralel'\]"):
        load_spec(write(tmp_path, "paralel: 2\nnotebooks:\n  - notebook: notebooks/template_count.ipynb\n"))


def test_grid_expands_to_named_runs(tmp_path):
    spec = load_spec(
        write(
            tmp_path,
            "notebooks:\n  - notebook: notebooks/template_count.ipynb\n"
            "    parameters: {source: recorded}\n"
            "    grid: {tie_rule: [first, random], seed: [0, 1]}\n",
        )
    )
    jobs = expand(spec, "r1", tmp_path / "runs", tmp_path / "results")
    assert [j.name for j in jobs] == [
        "template_count__tie_rule-first__seed-0",
        "template_count__tie_rule-first__seed-1",
        "template_count__tie_rule-random__seed-0",
        "template_count__tie_rule-random__seed-1",
    ]
    assert jobs[3].parameters == {
        "source": "recorded",
        "tie_rule": "random",
        "seed": 1,
        "out_dir": str(tmp_path / "results" / "r1" / jobs[3].name),
    }
    assert jobs[0].output == str(tmp_path / "runs" / "r1" / f"{jobs[0].name}.ipynb")


LIVE_SWEEP = """
run_id: live-test
parallel: 2
notebooks:
  - notebook: notebooks/notes_count.ipynb
    parameters: {source: live, n_questions: 2, strategies: [zero-shot, random], n_notes: [1], max_tokens: 16,
                 n_boot: 100}
  - notebook: notebooks/template_count.ipynb
    parameters: {source: live, n_questions: 2, templates: [turbo, ST], strategies: [zero-shot, random],
                 n_notes: 1, max_tokens: 16}
"""


def test_parallel_live_sweep_pays_each_prompt_once_and_reruns_from_cache(tmp_path, monkeypatch):
    import diskcache

    from olakit.llm.loopback import Loopback

    with Loopback(delay=0.05) as srv:
        monkeypatch.setenv("OLAKIT_BASE_URL", srv.base_url)
        monkeypatch.setenv("OLAKIT_MODEL", "fake")
        monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "cache"))
        spec = write(tmp_path, LIVE_SWEEP)
        index = run_sweep(spec, runs_dir=tmp_path / "runs", results_dir=tmp_path / "results")
        assert [r["status"] for r in index["runs"]] == ["ok", "ok"], [r["error"] for r in index["runs"]]
        # 2 type calls; ST x (zero-shot, random n=1) x 2 questions = 4, all shared with template_count;
        # template_count adds turbo x 2 strategies x 2 questions = 4
        unique = 2 + 4 + 4
        assert srv.requests == unique and set(srv.per_prompt.values()) == {1}
        with diskcache.Cache(str(tmp_path / "cache")) as cache:
            assert len(cache) == unique  # no entry lost, no in-flight marker left
        assert (tmp_path / "runs" / "live-test" / "notes_count.ipynb").is_file()
        saved = json.loads((tmp_path / "runs" / "live-test" / "index.json").read_text())
        assert saved["calls"]["paid"] + saved["calls"]["cached"] == saved["calls"]["unique_prompts"]
        man = json.loads((tmp_path / "results" / "live-test" / "template_count" / "manifest.json").read_text())
        assert man["endpoint"] == f"{srv.base_url}|fake" and man["model"] == ["fake"] and len(man["prompt_hashes"]) == 8
        assert (tmp_path / "results" / "live-test" / "notes_count" / "figures" / "fig9_notes_count.pdf").is_file()
        again = run_sweep(spec, runs_dir=tmp_path / "runs", results_dir=tmp_path / "results")
        assert srv.requests == unique and again["calls"]["paid"] == 0
