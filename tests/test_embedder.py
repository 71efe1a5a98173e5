"""The embedder's disk cache: vectors come back identical without loading the model (or torch) again."""

import subprocess
import sys

import diskcache
import numpy as np
import pytest

from olakit.retrieval import embedder

TEXTS = ["A train travels 60 km in 1.5 hours. What is its speed?", "How many legs has a spider?"]


@pytest.mark.real_model
def test_vectors_come_back_from_disk_without_the_model(tmp_path, monkeypatch):
    monkeypatch.setenv("OLAKIT_EMBED_CACHE_DIR", str(tmp_path))
    direct = embedder._model().encode(TEXTS, normalize_embeddings=True)  # the model itself, no cache in between
    monkeypatch.setattr(embedder, "_MEMO", {})
    first = embedder.embed(TEXTS)
    assert first.shape == (2, embedder.DIM) and np.allclose(first, direct, atol=1e-6)
    with diskcache.Cache(str(tmp_path)) as disk:
        assert len(disk) == 2

    def no_model():
        raise AssertionError("the model was loaded for texts already on disk")

    monkeypatch.setattr(embedder, "_MEMO", {})
    monkeypatch.setattr(embedder, "_model", no_model)
    again = embedder.embed([TEXTS[1], TEXTS[0], TEXTS[1]])
    assert np.array_equal(again, first[[1, 0, 1]])


@pytest.mark.real_model
def test_a_warm_rerun_imports_no_torch(tmp_path):
    code = (
        "import sys; from olakit.retrieval.embedder import embed; "
        f"v = embed({TEXTS!r}); print(v.shape, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    env = {"OLAKIT_EMBED_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    cold = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    warm = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert cold.stdout.split() == ["(2,", "384)", "True", "True"]
    assert warm.stdout.split() == ["(2,", "384)", "False", "False"]
