import os
from pathlib import Path

import pytest

from olakit.data import resolve_data_dir

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real data: $OLAKIT_DATA_DIR, data/raw or ../shared/data."""
    return resolve_data_dir()


@pytest.fixture(scope="session")
def olagpt_records(data_dir):
    from olakit.records import import_olagpt

    return import_olagpt(data_dir)


@pytest.fixture(autouse=True)
def _agg_backend(monkeypatch):
    monkeypatch.setenv("MPLBACKEND", os.environ.get("MPLBACKEND", "Agg"))
