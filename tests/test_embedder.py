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
@pytest.mark.parametrize(("cap", "during"), [(None, 2), ("1", 1), ("3", 2)])
def test_the_embedder_computes_on_at_most_the_embedded_threads_and_puts_torchs_count_back(
    cap, during, tmp_path, monkeypatch
):
    """OLAKIT_EMBEDDED_THREADS caps torch's threads while the model encodes (never raises them: a sweep's kernel
    keeps its OMP_NUM_THREADS share); the process's own count comes back after."""
    import torch

    monkeypatch.setenv("OLAKIT_EMBED_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("OLAKIT_EMBEDDED_THREADS", raising=False)
    if cap:
        monkeypatch.setenv("OLAKIT_EMBEDDED_THREADS", cap)
    model, seen = embedder._model(), []
    real = model.encode
    monkeypatch.setattr(model, "encode", lambda *a, **k: (seen.append(torch.get_num_threads()), real(*a, **k))[1])
    monkeypatch.setattr(embedder, "_MEMO", {})
    own = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert embedder.embed([f"{TEXTS[0]} ({cap})"]).shape == (1, embedder.DIM)
        assert seen == [during] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(own)


@pytest.mark.real_model
def test_encodings_from_threads_take_turns_and_leave_torchs_count_as_it_was(tmp_path, monkeypatch):
    """A tool loop's questions search from threads of their own: encodings that overlapped could each put back the
    other's cap, so they take turns, and the process's count is the same after."""
    import threading
    import time

    import torch

    monkeypatch.setenv("OLAKIT_EMBED_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("OLAKIT_EMBEDDED_THREADS", "1")
    model, inside, most = embedder._model(), [0], [0]
    real = model.encode

    def encode(*a, **k):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.2)  # long enough for the other threads to arrive
        try:
            return real(*a, **k)
        finally:
            inside[0] -= 1

    monkeypatch.setattr(model, "encode", encode)
    monkeypatch.setattr(embedder, "_MEMO", {})
    own = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        threads = [threading.Thread(target=embedder.embed, args=([f"question {i}"],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert most[0] == 1 and torch.get_num_threads() == 2
        assert len(embedder._MEMO) == 4
    finally:
        torch.set_num_threads(own)


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
