"""One run, whatever the door: every call made for a result goes through it, and it makes the Result.

- Models and endpoints are resolved here, and only here: the answerers given (one, for the ``answerer`` role, or
  role -> answerer), else each role's endpoint from the environment (``OLAKIT_<ROLE>_*``, else the configured
  endpoint, else the embedded model), with batch mode, an export file and the calls in flight; roles with the same
  endpoint share one client. ``olakit batch`` and ``olakit plan`` take theirs from here too (``endpoint``,
  ``journal``).
- Every call is counted per role, and a failed call is refused: the batch that had one raises CallsFailed, saying
  how many failed, of which role, the first cause, and that a rerun pays only what is missing (the answers
  received are cached). No path can turn a failure into a label, an empty text, a missing vote or a verdict.
- The data files read while it is open are the ones its log lists (olakit.data.loaders.reading).
- ``finish`` makes the Result (records, run log, extras, the cache keys of every answer); it writes nothing
  (``Result.write`` does).

    with Run("run", cfg, llm, kind="olagpt") as job:    # roles from the environment where not given
        replies = job["answerer"].batch(requests, "answers")    # CallsFailed if one failed
        result = job.finish(records, OlaGPTRecord, OlaGPTExtras(...))
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence

from olakit.data.loaders import reading, ref_of
from olakit.data.records import to_frame
from olakit.llm.answerer import Answerer, Counted, refuse
from olakit.llm.batch import BatchAnswerer
from olakit.llm.client import LLM, connect, role_llm
from olakit.llm.endpoint import Endpoint
from olakit.llm.request import Reply, Request
from olakit.registration import Registered
from olakit.result import Result
from olakit.runlog import Calls, RunLog, make_log, records_summary, role_entry
from olakit.types import Record


def endpoint(role: str = "answerer") -> Endpoint:
    """The endpoint a role's calls go to (the environment's; the embedded model when none is set)."""
    return Endpoint.from_env(role)


def journal() -> BatchAnswerer:
    """The provider batches journaled for the configured endpoint (``olakit batch status``, ``cancel``, ``ingest``):
    any endpoint's, the embedded model's too, since exported requests are journaled for whichever endpoint the run
    was given."""
    return BatchAnswerer(LLM(endpoint()), progress=False)


class RoleCalls(Counted):
    """One role's calls in a run: counted, the cache keys of their answers kept, and a batch with a failed call
    raises CallsFailed (after every answer that came back has been cached by the client)."""

    def __init__(self, answerer: Answerer, role: str, params: dict | None = None):
        super().__init__(answerer)
        self.role = role
        self.keys: set[str] = set()
        self.params = {k: v for k, v in (params or {}).items() if v is not None}
        """Parameters every call of the run carries (its config's reasoning effort): in each call's cache key."""

    def batch(self, requests: Sequence[Request], desc: str | None = "LLM calls") -> list[Reply]:
        if self.params:
            requests = [r.continued(r.message_dicts(), **self.params) for r in requests]
        replies = refuse(super().batch(requests, desc), f"{self.role}: {desc or 'calls'}")
        self.keys.update(r.key for r in replies if r.key)
        return replies


class Run:
    """One run of a door: its roles' answerers (``run[role]``, each a RoleCalls), the files it reads, its Result.

    ``models``: an Answerer (the ``answerer`` role), a mapping role -> Answerer, or None (every role from the
    environment, with ``concurrency`` calls in flight, ``batch`` through the provider's Batch API, or ``export`` to a
    batch input file). ``parameters``: the door's own flags for the log. ``registration``: a pre-registered family,
    read before this run's first call."""

    def __init__(
        self,
        door: str,
        config=None,
        models: Answerer | Mapping[str, Answerer] | None = None,
        *,
        kind: str,
        roles: Sequence[str] = ("answerer",),
        parameters: dict | None = None,
        concurrency: int | None = None,
        batch: bool | None = None,
        export: str | None = None,
        registration: Registered | None = None,
    ):
        self.door, self.config, self.kind = door, config, kind
        self.parameters = dict(parameters or {})
        self.registration = registration
        self._reading = reading()
        self.files = self._reading.__enter__()
        given = dict(models) if isinstance(models, Mapping) else ({"answerer": models} if models is not None else {})
        self._owned: list = []
        self._options = {"concurrency": concurrency} if concurrency else {}
        if "answerer" not in given:
            given["answerer"] = self._own(connect(endpoint("answerer"), batch=batch, export=export, **self._options))
        self.models = given
        self.roles: dict[str, RoleCalls] = {}
        for role in dict.fromkeys(["answerer", *roles]):
            self.add_role(role)
        self.t0 = time.perf_counter()

    def add_role(self, role: str) -> RoleCalls:
        """A role's calls, its answerer the one given, else its endpoint's from the environment (the answerer's when
        it has none of its own): for a role a run needs only once it has read its questions (a judge)."""
        if role not in self.roles:
            if role not in self.models:
                model = role_llm(role, self.models["answerer"], **self._options)
                self.models[role] = model if model is self.models["answerer"] else self._own(model)
            carried = self.config.reasoning() if hasattr(self.config, "reasoning") else {}  # every method's (Reasoning)
            self.roles[role] = RoleCalls(self.models[role], role, carried)
        return self.roles[role]

    @property
    def batched(self) -> bool:
        """Whether the answerer's calls go out as provider batches (or an export file)."""
        return isinstance(self.models["answerer"], BatchAnswerer)

    def _own(self, model):
        self._owned.append(model)
        return model

    def __getitem__(self, role: str) -> RoleCalls:
        if role not in self.roles:
            raise KeyError(f"role {role!r} is not one of this run's ({', '.join(self.roles)})")
        return self.roles[role]

    @property
    def answerer(self) -> RoleCalls:
        return self.roles["answerer"]

    @property
    def keys(self) -> frozenset:
        """The cache keys of every answer of this run, over its roles."""
        return frozenset().union(*(c.keys for c in self.roles.values()))

    def log(self, records=None, **more) -> RunLog:
        """The run log as it stands: roles (those that made calls, and the answerer), calls, wall time, the files
        read, the dataset, the registration."""
        used = {r: c for r, c in self.roles.items() if c.counts["requests"] or r == "answerer"}
        outputs = {"records": records_summary(records)} if records is not None else {}
        dataset = ref_of(self.config) if self.config is not None and hasattr(self.config, "dataset") and \
            getattr(self.config, "dataset", "open") != "open" else None  # fmt: skip
        return make_log(
            self.door,
            self.config,
            kind=self.kind,
            parameters=self.parameters,
            files=list(self.files),
            roles={r: role_entry(c.endpoint, c.fingerprints, c.refused) for r, c in used.items()},
            calls={r: Calls(**c.counts) for r, c in used.items()},
            wall_s=round(time.perf_counter() - self.t0, 2),
            outputs=outputs,
            dataset=dataset,
            registration=self.registration.entry() if self.registration is not None else None,
            **more,
        )

    def finish(self, records: Iterable[Record], kind: type[Record], extras, files: dict | None = None) -> Result:
        """The Result: the records (of one kind) as a frame, the run log, ``extras`` (the kind's, olakit.result),
        the cache keys of every answer, and ``files`` (other records frames)."""
        frame = to_frame(records, kind)
        return Result(frame, self.log(frame), extras, answers=self.keys, files=dict(files or {}))

    def close(self) -> None:
        for model in self._owned:
            close = getattr(model, "close", None)
            if close is not None:
                close()
        self._owned.clear()
        if self._reading is not None:
            self._reading.__exit__(None, None, None)
            self._reading = None

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
