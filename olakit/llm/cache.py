"""The answer cache: one entry per cache key (olakit.llm.request.cache_key), written the moment an answer arrives,
never for an error; and in-flight claims, so that parallel processes sharing the cache (the notebooks of a sweep)
pay for each prompt once.

The store is diskcache (SQLite) in ``$OLAKIT_CACHE_DIR`` (default ``~/.cache/olakit/llm``), safe for several
processes at once.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

INFLIGHT = "inflight:"
"""Prefix of the cache's in-flight markers (never an answer)."""


def default_cache_dir() -> Path:
    """``$OLAKIT_CACHE_DIR`` or ``~/.cache/olakit/llm``."""
    return Path(os.environ.get("OLAKIT_CACHE_DIR") or Path.home() / ".cache" / "olakit" / "llm")


def alive(pid) -> bool:
    """Whether a process of this machine with that pid exists.

    >>> alive(os.getpid())
    True
    """
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError, OverflowError):
        return True
    return True


class AnswerCache:
    """Answers by cache key, and in-flight claims, in a diskcache directory (opened on first use)."""

    def __init__(self, directory: str | os.PathLike | None = None):
        self.directory = Path(directory) if directory else default_cache_dir()
        self._store = None

    @property
    def store(self):
        if self._store is None:
            import diskcache

            self.directory.mkdir(parents=True, exist_ok=True)
            self._store = diskcache.Cache(str(self.directory), timeout=60)
        return self._store

    def get(self, key: str) -> dict | None:
        """The stored answer (text, tokens, finish reason, latency, model) or None."""
        return self.store.get(key)

    def set(self, key: str, answer: dict) -> None:
        self.store.set(key, answer)

    async def claim(self, key: str, expire: float) -> dict | None:
        """Claim a key for this process: None when claimed, or the answer another process stored meanwhile.

        The claim is an in-flight marker (an atomic ``add``); it is dropped by ``release``, lapses after
        ``expire`` seconds, and is taken over when its process no longer exists (e.g. killed).
        """
        marker = INFLIGHT + key
        while True:
            if self.store.add(marker, os.getpid(), expire=expire):
                hit = self.get(key)  # stored by the previous owner just before its marker went
                if hit is not None:
                    self.release(key)
                return hit
            hit = self.get(key)
            if hit is not None:
                return hit
            owner = self.store.get(marker)
            if owner is None:
                continue
            if owner == os.getpid():
                return None  # this process already calls it (another batch); no wait on ourselves
            if not alive(owner):
                self.store.delete(marker)
                continue
            await asyncio.sleep(0.05)

    def release(self, key: str) -> None:
        self.store.delete(INFLIGHT + key)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
