"""The one seeded random-number helper: a generator fixed by a seed and a key (question id, purpose, ...), so a
random choice for one question is the same on every run and independent of the other questions.

``keyed_rng(0, "random", "test-3").integers(10)`` gives the same number on every run.
"""

import zlib

import numpy as np


def keyed_rng(seed: int, *key) -> np.random.Generator:
    """A numpy Generator seeded by ``seed`` and the crc32 of the joined ``key`` parts."""
    return np.random.default_rng([seed, zlib.crc32("\x1f".join(map(str, key)).encode())])
