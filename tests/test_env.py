"""The environment is read in one place (olakit.env): reading it starts nothing, a misspelled OLAKIT_ name is
warned about once, and files go to the user's directories (platformdirs) unless a variable says otherwise."""

import logging
import subprocess
import sys

from olakit import env


def test_reading_the_endpoint_starts_no_process():
    code = (
        "import olakit.llm.daemon as daemon\n"
        "from olakit.llm import Endpoint\n"
        "e = Endpoint.from_env()\n"
        "assert e.local and e.base_url == '' and e.identity.startswith('olakit-embedded|'), e\n"
        "assert daemon._mine is None\n"
        "print('ok', e.model)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("ok qwen"), r.stderr[-1500:]


def test_a_misspelled_variable_is_warned_about_once(monkeypatch, caplog):
    monkeypatch.setenv("OLAKIT_REVIEWR_MODEL", "x")
    monkeypatch.setattr(env, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="olakit"):
        env.environment()
        env.endpoint_vars("reviewer")
    lines = [r.getMessage() for r in caplog.records if "OLAKIT_REVIEWR_MODEL" in r.getMessage()]
    assert len(lines) == 1 and "is not an olakit variable" in lines[0] and "OLAKIT_REVIEWER_MODEL" in lines[0]


def test_role_variables_and_key_fallback(monkeypatch):
    monkeypatch.setenv("OLAKIT_BASE_URL", "http://a/v1")
    monkeypatch.setenv("OLAKIT_MODEL", "m")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-from-openai-var")
    monkeypatch.setenv("OLAKIT_JUDGE_BASE_URL", "http://b/v1")
    monkeypatch.setenv("OLAKIT_JUDGE_MODEL", "big")
    general, prefix = env.endpoint_vars()
    judge, judge_prefix = env.endpoint_vars("judge")
    assert (general.base_url, prefix, judge.base_url, judge.model, judge_prefix) == (
        "http://a/v1",
        "OLAKIT_",
        "http://b/v1",
        "big",
        "OLAKIT_JUDGE_",
    )
    assert judge.api_key.get_secret_value() == "test-key-from-openai-var" and "test-key" not in repr(judge)


def test_files_go_to_the_user_directories_unless_set(monkeypatch, tmp_path):
    from olakit.llm.cache import default_cache_dir

    monkeypatch.delenv("OLAKIT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "olakit" / "llm"
    monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"


def test_the_environment_is_read_again_only_when_a_variable_changes(monkeypatch):
    """environment() keeps what it read (8 ms a read; a notebook asks dozens of times) until an OLAKIT_ variable
    changes, in any case of its name (pydantic-settings reads them case-insensitively)."""
    monkeypatch.delenv("OLAKIT_BATCH_POLL", raising=False)
    first = env.environment()
    assert env.environment() is first and first.batch_poll == 10.0
    monkeypatch.setenv("OLAKIT_BATCH_POLL", "3")
    assert env.environment().batch_poll == 3.0
    monkeypatch.delenv("OLAKIT_BATCH_POLL")
    monkeypatch.setenv("olakit_batch_poll", "4")
    assert env.environment().batch_poll == 4.0
    monkeypatch.delenv("olakit_batch_poll")
    assert env.environment().batch_poll == 10.0
