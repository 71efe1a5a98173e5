"""The answer cache: one entry per cache key (olakit.llm.request.cache_key), written the moment an answer arrives,
never for an error; and in-flight claims, so that parallel processes sharing the cache (the notebooks of a sweep,
the workers of a cluster) pay for each prompt once.

Two stores, one set of rules, chosen by ``open_cache``:

- diskcache (SQLite) in ``$OLAKIT_CACHE_DIR`` (default ``~/.cache/olakit/llm``), safe for the processes of one
  machine (the default);
- Redis when ``$OLAKIT_CACHE_URL`` is ``redis://HOST:PORT/DB`` (or ``rediss://``, ``unix://``), shared by every
  machine that reaches it. An answer is ``olakit:answer:<key>`` (JSON); a claim is ``olakit:inflight:<key>``, set
  only if absent (SET NX) with a lease of CLAIM_LEASE seconds that its owner renews while the call runs: a claim
  whose owner died lapses within a lease on any machine, and at once on the owner's machine (its pid is gone).

``copy_cache(src, dst)`` copies the answers of one store into the other (``olakit cache copy``).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import urllib.parse
from pathlib import Path

from olakit.env import environment, user_dir
from olakit.errors import OlakitError, require_extra

INFLIGHT = "inflight:"
"""Prefix of the diskcache store's in-flight markers (never an answer)."""
REDIS_ANSWER = "olakit:answer:"
REDIS_CLAIM = "olakit:inflight:"
CLAIM_LEASE = 30.0
"""Seconds a Redis claim lives unless its owner renews it (every third of that while its call runs)."""
REDIS_SCHEMES = ("redis", "rediss", "unix")


class CacheError(OlakitError):
    """The answer cache cannot be reached or is misconfigured (the message says which and how to fix it)."""


def default_cache_dir() -> Path:
    """``$OLAKIT_CACHE_DIR``, else the user cache directory's ``olakit/llm`` (platformdirs)."""
    return environment().cache_dir or user_dir("llm")


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


def redact(url: str) -> str:
    """A cache URL fit for logs and manifests: any password replaced by ``***``.

    >>> redact("redis://:s3cret@db.lab:6379/0")
    'redis://:***@db.lab:6379/0'
    """
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def open_cache(directory: str | os.PathLike | None = None):
    """The answer cache: a diskcache in ``directory`` when one is given, else Redis at ``$OLAKIT_CACHE_URL`` when
    that is set, else a diskcache in ``$OLAKIT_CACHE_DIR``. A URL of another scheme is a CacheError."""
    url = environment().cache_url.strip()
    if directory is not None or not url:
        return AnswerCache(directory)
    return RedisCache(url)


def cache_location(url_or_dir: str | os.PathLike) -> AnswerCache | RedisCache:
    """A store named by a Redis URL or a directory (for ``olakit cache copy``)."""
    text = str(url_or_dir)
    return RedisCache(text) if "://" in text else AnswerCache(text)


class AnswerCache:
    """Answers by cache key, and in-flight claims, in a diskcache directory (opened on first use)."""

    def __init__(self, directory: str | os.PathLike | None = None):
        self.directory = Path(directory) if directory else default_cache_dir()
        self.location = str(self.directory)
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

    def get_many(self, keys: list[str]) -> list[dict | None]:
        return [self.store.get(k) for k in keys]

    def set(self, key: str, answer: dict) -> None:
        self.store.set(key, answer)

    def keys(self):
        """Every answer's key (claims left out)."""
        return (k for k in self.store.iterkeys() if not str(k).startswith(INFLIGHT))

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

    def store_answer(self, key: str, answer: dict) -> None:
        """Store an answer and drop the claim on it."""
        self.set(key, answer)
        self.release(key)

    async def astore_answer(self, key: str, answer: dict) -> None:
        """store_answer off the event loop (an SQLite commit may take a while)."""
        await asyncio.to_thread(self.store_answer, key, answer)

    async def aclose(self) -> None:
        return None

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


# delete a claim only if it is still ours (a lapsed claim may have been taken over meanwhile)
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
# one round trip to claim: set the claim if absent; either way return whether we hold it, the answer if one was
# stored meanwhile, and the claim's owner
_CLAIM = """
local held = redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
return {held and 1 or 0, redis.call('get', KEYS[2]), redis.call('get', KEYS[1])}
"""
# one round trip to store an answer and drop our claim on it
_STORE = """
redis.call('set', KEYS[2], ARGV[2])
if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]) end
return 1
"""


def _connection_options(retry_class) -> dict:
    """Timeouts, and a retry on a dropped connection (a Redis that restarted leaves its old connections dead)."""
    redis = require_extra("redis", "cluster", "a Redis answer cache")
    from redis.backoff import ExponentialBackoff

    return {
        "socket_timeout": 10,
        "socket_connect_timeout": 5,
        "retry": retry_class(ExponentialBackoff(cap=0.5, base=0.05), 2),
        "retry_on_error": [redis.ConnectionError, redis.TimeoutError],
    }


class RedisCache:
    """Answers by cache key, and in-flight claims, in Redis (redis-py), shared by every machine that reaches it."""

    def __init__(self, url: str):
        scheme = urllib.parse.urlsplit(url).scheme
        if scheme not in REDIS_SCHEMES:
            raise CacheError(
                f"OLAKIT_CACHE_URL={redact(url)!r}: the scheme {scheme or '(none)'!r} is not a Redis URL; write "
                f"redis://HOST:6379/0 (or rediss://, unix://), or unset it for the diskcache in $OLAKIT_CACHE_DIR"
            )
        self.url = url
        self.location = redact(url)
        self.directory = None
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self._store = None
        self._scripts: dict = {}
        self._aclients: dict = {}  # event loop -> (redis.asyncio client, its scripts): claims and stores never block
        self._held: set[str] = set()  # claims this process holds; one daemon thread renews them all
        self._writes: dict = {}  # event loop -> answers waiting for the next pipelined write
        self._renewer: threading.Thread | None = None
        self._closing = threading.Event()

    @property
    def store(self):
        """The redis-py client, connected and checked (PING) on first use: CacheError when Redis is unreachable."""
        if self._store is None:
            redis = require_extra("redis", "cluster", "a Redis answer cache")

            client = redis.Redis.from_url(self.url, **_connection_options(redis.retry.Retry))
            try:
                client.ping()
            except redis.RedisError as exc:
                client.close()
                raise CacheError(
                    f"the answer cache at {self.location} (OLAKIT_CACHE_URL) is unreachable: {exc}; start Redis "
                    f"there or unset OLAKIT_CACHE_URL"
                ) from None
            self._store = client
            self._scripts = {"release": client.register_script(_RELEASE)}
        return self._store

    async def _ascripts(self) -> dict:
        """The scripts on this event loop's asyncio client (made on first use in each loop)."""
        import redis.asyncio

        loop = asyncio.get_running_loop()
        for other in [lp for lp in self._aclients if lp.is_closed()]:
            del self._aclients[other]
        if loop not in self._aclients:
            self.store  # noqa: B018 -- reachable, or one CacheError
            client = redis.asyncio.Redis.from_url(self.url, **_connection_options(redis.asyncio.retry.Retry))
            scripts = {name: client.register_script(src) for name, src in (("claim", _CLAIM), ("store", _STORE))}
            self._aclients[loop] = (client, scripts)
        return self._aclients[loop][1]

    async def aclose(self) -> None:
        """Close this event loop's asyncio client (the LLM does before it stops its loop)."""
        self._writes.pop(asyncio.get_running_loop(), None)
        client, _ = self._aclients.pop(asyncio.get_running_loop(), (None, None))
        if client is not None:
            await client.aclose()

    def get(self, key: str) -> dict | None:
        raw = self.store.get(REDIS_ANSWER + key)
        return None if raw is None else json.loads(raw)

    def get_many(self, keys: list[str]) -> list[dict | None]:
        """Answers of many keys in one round trip (MGET)."""
        if not keys:
            return []
        return [None if raw is None else json.loads(raw) for raw in self.store.mget([REDIS_ANSWER + k for k in keys])]

    def set(self, key: str, answer: dict) -> None:
        self.store.set(REDIS_ANSWER + key, json.dumps(answer, ensure_ascii=False))

    def set_many(self, items: dict[str, dict]) -> None:
        """Store many answers in one round trip (a pipeline)."""
        with self.store.pipeline(transaction=False) as pipe:
            for key, answer in items.items():
                pipe.set(REDIS_ANSWER + key, json.dumps(answer, ensure_ascii=False))
            pipe.execute()

    def keys(self):
        """Every answer's key (claims left out)."""
        n = len(REDIS_ANSWER)
        return (k.decode()[n:] for k in self.store.scan_iter(match=REDIS_ANSWER + "*", count=1000))

    async def claim(self, key: str, expire: float) -> dict | None:
        """Claim a key for this process (SET NX with a lease, renewed while the call runs): None when claimed, or
        the answer another process, on any machine, stored meanwhile. ``expire`` is not used: a lease lapses
        CLAIM_LEASE seconds after its owner stops renewing it. One round trip when the key is free."""
        marker, lease_ms = REDIS_CLAIM + key, int(CLAIM_LEASE * 1000)
        scripts = await self._ascripts()
        while True:
            held, raw, owner = await scripts["claim"](keys=[marker, REDIS_ANSWER + key], args=[self.owner, lease_ms])
            hit = None if raw is None else json.loads(raw)
            if held:
                if hit is not None:  # stored by the previous owner just before its claim went
                    self.release(key)
                else:
                    self._held.add(marker)
                    if self._renewer is None:
                        self._renewer = threading.Thread(target=self._renew, args=(lease_ms,), daemon=True)
                        self._renewer.start()
                return hit
            if hit is not None:
                return hit
            if owner is None:
                continue
            owner = owner.decode()
            if owner == self.owner:
                return None  # this process already calls it (another batch); no wait on ourselves
            host, _, pid = owner.rpartition(":")
            if host == socket.gethostname() and not alive(pid):
                self._scripts["release"](keys=[marker], args=[owner])  # its owner here is gone: take it over
                continue
            await asyncio.sleep(0.05)

    async def astore_answer(self, key: str, answer: dict) -> None:
        """Store an answer and drop this process's claim on it; returns once it is stored. The answers that arrive
        while a write is under way go together in the next one (one pipelined round trip), so a burst of answers
        needs one connection and one round trip, not one each."""
        self._held.discard(REDIS_CLAIM + key)
        loop = asyncio.get_running_loop()
        waiting, writer = self._writes.get(loop, ([], None))
        done = loop.create_future()
        waiting.append((key, json.dumps(answer, ensure_ascii=False), done))
        if writer is None or writer.done():
            writer = loop.create_task(self._write(waiting))
        self._writes[loop] = (waiting, writer)
        await done

    async def _write(self, waiting: list) -> None:
        """Write what is waiting, in pipelines, until nothing is (one writer per event loop)."""
        while waiting:
            batch = waiting[:]
            del waiting[:]
            try:
                scripts = await self._ascripts()
                client = self._aclients[asyncio.get_running_loop()][0]
                async with client.pipeline(transaction=False) as pipe:
                    for key, raw, _ in batch:
                        await scripts["store"](
                            keys=[REDIS_CLAIM + key, REDIS_ANSWER + key], args=[self.owner, raw], client=pipe
                        )
                    await pipe.execute()
                outcome = None
            except Exception as exc:  # each waiting store fails with it (the caller logs; nothing half-written)
                outcome = exc
            for *_, done in batch:
                if done.done():
                    continue
                if outcome is None:
                    done.set_result(None)
                else:
                    done.set_exception(outcome)

    def _renew(self, lease_ms: int) -> None:
        """Renew every claim this process holds, each third of a lease, until the cache is closed."""
        while not self._closing.wait(CLAIM_LEASE / 3):
            held = list(self._held)
            if not held:
                continue
            try:
                with self.store.pipeline(transaction=False) as pipe:
                    for marker in held:
                        pipe.pexpire(marker, lease_ms)
                    pipe.execute()
            except Exception:  # Redis away: these leases lapse; each call's own outcome decides what is stored
                continue

    def release(self, key: str) -> None:
        self._held.discard(REDIS_CLAIM + key)
        self.store  # noqa: B018
        self._scripts["release"](keys=[REDIS_CLAIM + key], args=[self.owner])

    def close(self) -> None:
        self._held.clear()
        self._closing.set()
        if self._renewer is not None:
            self._renewer.join(timeout=5)
            self._renewer = None
        self._closing.clear()  # usable again: the next claim starts a new renewer
        if self._store is not None:
            self._store.close()
            self._store = None


def copy_cache(src, dst, batch: int = 1000) -> int:
    """Copy every answer of ``src`` into ``dst`` (stores from ``cache_location``); claims are not copied and answers
    already in ``dst`` are overwritten by the same answer. Returns the number copied."""
    if isinstance(src, AnswerCache) and not (src.directory / "cache.db").is_file():
        raise CacheError(f"{src.directory}: no answer cache there (a diskcache directory holds cache.db)")
    n, chunk = 0, {}

    def flush():
        if isinstance(dst, RedisCache):
            dst.set_many(chunk)
        else:
            with dst.store.transact():
                for k, v in chunk.items():
                    dst.set(k, v)
        chunk.clear()

    for key in src.keys():
        answer = src.get(key)
        if answer is None:
            continue
        chunk[key] = answer
        n += 1
        if len(chunk) >= batch:
            flush()
    if chunk:
        flush()
    return n
