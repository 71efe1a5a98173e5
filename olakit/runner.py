"""What the three methods' runs share: the calls counted through one Answerer, the one "calls failed, rerun"
error, and the write at the end (nothing is written unless every call succeeded; a rerun is served from the cache
and pays only what is missing).

    with_run = Run(llm)                         # the answerer the method's calls go through: with_run.answerer
    ...                                         # the method's batches
    with_run.check("answers")                   # CallsFailed when a call failed after retries
    frame, calls = with_run.finish(records, OlaGPTRecord, out_dir)   # written atomically; calls, wall_s

The slice of questions is the config's (``olakit.config.Slice.pick``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from olakit.data.records import save_records, to_frame
from olakit.errors import OlakitError
from olakit.llm.answerer import Answerer, Counted
from olakit.llm.client import CACHE_UNAVAILABLE
from olakit.types import Record


class CallsFailed(OlakitError):
    """Calls failed after retries; nothing was written; a rerun pays only the calls still missing."""


def calls_failed(n: int, of: int, what: str, error: str | None = None) -> CallsFailed:
    """The one message for failed calls.

    >>> str(calls_failed(2, 6, "answers", "APITimeoutError: timed out")).split(";")[0]
    '2 of 6 calls (answers) failed after retries (APITimeoutError: timed out)'
    """
    cause = f" ({error})" if error else ""
    if error and error.startswith(CACHE_UNAVAILABLE):  # nothing could be cached: do not promise it was
        return CallsFailed(
            f"{n} of {of} calls ({what}) were not made: {error}; nothing was paid or written. Rerun once the cache "
            "is back"
        )
    return CallsFailed(
        f"{n} of {of} calls ({what}) failed after retries{cause}; nothing was written. Rerun: the answers already "
        "received are cached and only the missing calls are made"
    )


class Run:
    """One method run: its answerer counts every call; ``check`` raises CallsFailed; ``finish`` writes."""

    def __init__(self, answerer: Answerer):
        self.answerer = Counted(answerer)
        self.t0 = time.perf_counter()

    @property
    def calls(self) -> dict:
        return self.answerer.counts

    def check(self, what: str = "all") -> None:
        c = self.calls
        if c["failed"]:
            raise calls_failed(c["failed"], c["unique_prompts"], what, self.answerer.first_error)

    def finish(
        self, records: Iterable[Record], kind: type[Record], out_dir: str | Path | None = None
    ) -> tuple[pd.DataFrame, dict]:
        """(the records, of one kind, as a frame; the calls with the wall time); records.parquet in out_dir when
        given."""
        self.check()
        frame = to_frame(records, kind)
        if out_dir is not None:
            save_records(frame, Path(out_dir) / "records.parquet")
        return frame, {**self.calls, "wall_s": round(time.perf_counter() - self.t0, 2)}
