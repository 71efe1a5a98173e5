import os
import sys
from pathlib import Path

import pytest

from olakit.data.loaders import resolve_data_dir
from olakit.env import endpoint_names
from tests.docs_blocks import run_folder

REPO = Path(__file__).resolve().parent.parent
ENDPOINT_VARS = (
    *endpoint_names(),
    "OPENAI_API_KEY",
    "OLAKIT_EMBEDDED_URL",
    "OLAKIT_EMBEDDED_LOG",
    "OLAKIT_CACHE_URL",
    "OLAKIT_EMBEDDED_MODEL",
)
"""What a test never takes from the shell: every endpoint (general and per role), keys, a shared cache, a server."""


WATCHED = ("", "results", "runs", "figures", "notebooks")
"""Folders of the checkout a test must not write into (the repository root included): tests write under tmp_path
and test-artifacts/ only."""


def _entries() -> set[str]:
    return {
        f"{folder}/{p.name}".lstrip("/")
        for folder in WATCHED
        if (REPO / folder).is_dir()
        for p in (REPO / folder).iterdir()
    }


@pytest.fixture(scope="session", autouse=True)
def _repository_untouched():
    """`make test` once left an empty results/x/ behind (a sweep called without results_dir)."""
    before = _entries()
    yield
    new = sorted(_entries() - before - {".pytest_cache", "test-artifacts"})
    assert not new, f"the tests wrote into the repository: {new}"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path_factory):
    """Every test gets its own answer cache and no endpoint from the shell: a test never writes into the user's
    cache, and never calls a configured (possibly paid) endpoint. The joined model file (OLAKIT_MODEL_DIR) stays
    shared. Matplotlib keeps the user's default backend (none is set here)."""
    monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("OLAKIT_INDEX_DIR", str(run_folder(tmp_path_factory) / "indexes"))  # shared: built once
    monkeypatch.setenv("OLAKIT_EMBED_CACHE_DIR", str(run_folder(tmp_path_factory) / "embeddings"))  # shared too
    for name in ENDPOINT_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _figures_closed():
    """A test's pyplot figures are closed after it (a user's notebook shows and drops its own): a worker that runs
    many tests otherwise holds them all, and matplotlib warns at its 21st."""
    yield
    if "matplotlib.pyplot" in sys.modules:  # never imported here for a test that drew nothing
        sys.modules["matplotlib.pyplot"].close("all")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real data: $OLAKIT_DATA_DIR, data/raw or ../shared/data."""
    return resolve_data_dir()


@pytest.fixture(scope="session")
def olagpt_records(data_dir):
    from olakit.data.recorded import import_olagpt

    return import_olagpt(data_dir)


@pytest.fixture
def own_machine(tmp_path) -> dict:
    """An environment for subprocesses with a machine of their own as far as olakit's embedded server goes (its own
    servers folder, via XDG_CACHE_HOME), the joined model file shared: a test that watches a server start or stop
    does not meet the one the rest of the session shares."""
    from olakit.llm.local import model_dir

    env = {k: v for k, v in os.environ.items() if k not in ("OLAKIT_EMBEDDED_URL", "OLAKIT_EMBEDDED_LOG")}
    return {**env, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "OLAKIT_MODEL_DIR": str(model_dir())}
