"""The answer cache: one entry per cache key (olakit.llm.request.cache_key), written the moment an answer arrives,
never for an error; and in-flight claims, so that parallel processes sharing the cache (the notebooks of a sweep,
the workers of a cluster) pay for each prompt once.

Two stores, one set of rules, chosen by ``open_cache``:

- diskcache (SQLite) in ``$OLAKIT_CACHE_DIR`` (default ``~/.cache/olakit/llm``), safe for the processes of one
  machine (the default);
- Redis when ``$OLAKIT_CACHE_URL`` is ``redis://HOST:PORT/DB`` (or ``rediss://``, ``unix://``), shared by every
  machine that reaches it. An answer is ``olakit:answer:<key>`` (JSON); a claim is
  ``olakit:inflight:{olakit:answer:<key>}`` (a hash tag: claim and answer live in one Redis Cluster slot, so each
  script touches one slot), set only if absent (SET NX) with a lease of CLAIM_LEASE seconds that its owner renews
  while the call runs. The event loop's claims, stores and releases go as EVALSHA in one pipeline per round trip
  (those made while one is under way wait for the next), on one connection.

The claims' rules, in both stores:

- A claim holds its owner's token (``owner_token``): host, kernel boot id, pid namespace, pid and a random part, so
  two processes never share one, whatever their containers. A claim whose owner died lapses within a lease; it is
  taken over at once only when its owner is provably gone: same host, same kernel, same pid namespace, and no such
  pid (a process in another container with the same hostname is never judged from here).
- Renewal and storing are fenced: each checks, in one script, that the claim is still its owner's. An owner that
  lost its claim (a pause longer than the lease) stops renewing it and does not store over the process that took
  it over, or over an answer already stored; ``lost`` holds their keys.
- A call whose claim another process holds does not wait in its concurrency slot: ``try_claim`` says "busy" and
  the caller goes on with other prompts, coming back to ``claim`` (which waits) when it has nothing else to do.
  As a call starts, the calls next in line are claimed (olakit.llm.client): a process holds at most three claims
  per concurrency slot (its call, its lane's next, one lane's first).
- A claim is released when its call fails or is cancelled (``arelease``, off the event loop's thread for
  diskcache), so a batch cancelled in a notebook (``asyncio.wait_for`` timing out) leaves no claim behind.

``copy_cache(src, dst)`` copies the answers of one store into the other (``olakit cache copy``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import threading
import urllib.parse
import uuid
from pathlib import Path

from olakit.env import environment, user_dir
from olakit.errors import OlakitError, require_extra

INFLIGHT = "inflight:"
JOURNAL = "batch-journal:"
"""The key prefix of the batch journal in a diskcache store (olakit.llm.batch)."""
JOURNAL_LOCK = 300.0
"""Seconds a journal lock lasts when its holder dies holding it (submitting a batch takes far less)."""
"""Prefix of the diskcache store's in-flight markers (never an answer)."""
REDIS_ANSWER = "olakit:answer:"
REDIS_JOURNAL = "olakit:batch-journal:"
REDIS_CLAIM = "olakit:inflight:"
CLAIM_LEASE = 30.0
"""Seconds a Redis claim lives unless its owner renews it (every third of that while its call runs)."""
REDIS_SCHEMES = ("redis", "rediss", "unix")
POLL = 0.05
"""Seconds between two looks at a claim another process holds."""


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


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return ""


_TOKEN: tuple[int, str] | None = None


def owner_token() -> str:
    """This process's claim owner token: ``host|boot id|pid namespace|pid|random``. The random part makes it unique;
    the rest says where the owner runs (``local_pid``). Made again in a forked child.

    >>> owner_token() == owner_token() and owner_token().split("|")[3] == str(os.getpid())
    True
    """
    global _TOKEN
    if _TOKEN is None or _TOKEN[0] != os.getpid():
        boot = _read("/proc/sys/kernel/random/boot_id")
        _TOKEN = (os.getpid(), f"{socket.gethostname()}|{boot}|{_pid_namespace()}|{os.getpid()}|{uuid.uuid4().hex}")
    return _TOKEN[1]


def local_pid(owner: str) -> int | None:
    """The pid of a claim's owner when it runs where this process can see its pids (the same host, kernel and pid
    namespace, all known), else None: its death can then only be told by its lease lapsing.

    >>> local_pid(owner_token()) == os.getpid(), local_pid("otherhost|b|1|42|x"), local_pid("host:42")
    (True, None, None)
    """
    parts = owner.split("|")
    if len(parts) != 5:
        return None  # another format (an older olakit's host:pid): trust its lease only
    mine = owner_token().split("|")
    if parts[:3] != mine[:3] or not all(parts[:3]):
        return None
    try:
        return int(parts[3])
    except ValueError:
        return None


def gone(owner) -> bool:
    """Whether a claim's owner is provably dead (see ``local_pid``)."""
    pid = local_pid(str(owner))
    return pid is not None and not alive(pid)


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


class _Claims:
    """What both stores share: waiting for a claim, on top of each store's one attempt (``try_claim``)."""

    async def claim(self, key: str, expire: float) -> dict | None:
        """Claim a key, waiting while another live process holds it: None when ours, else the answer it stored."""
        while True:
            mine, hit = await self.try_claim(key, expire)
            if mine or hit is not None:
                return hit
            await asyncio.sleep(POLL)


class AnswerCache(_Claims):
    """Answers by cache key, and in-flight claims, in a diskcache directory (opened on first use)."""

    def __init__(self, directory: str | os.PathLike | None = None):
        self.directory = Path(directory) if directory else default_cache_dir()
        self.location = str(self.directory)
        self._store = None
        self.owner = owner_token()
        self.lost: set[str] = set()
        """Keys whose claim this process lost (it lapsed): its answer was not stored as its own."""

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
        """Every answer's key (claims and the batch journal left out)."""
        return (k for k in self.store.iterkeys() if not str(k).startswith((INFLIGHT, JOURNAL)))

    def journal(self, name: str) -> dict:
        """A batch journal (olakit.llm.batch): what was submitted and not yet collected; empty when none."""
        return self.store.get(JOURNAL + name) or {}

    def set_journal(self, name: str, entries: dict) -> None:
        if entries:
            self.store.set(JOURNAL + name, entries)
        else:
            self.store.delete(JOURNAL + name)

    def journal_lock(self, name: str):
        """The lock every process holds while it reads the journal and submits (diskcache's own Lock, lapsing after
        JOURNAL_LOCK s should its holder die): two processes never submit the same request."""
        import diskcache

        return diskcache.Lock(self.store, JOURNAL + "lock:" + name, expire=JOURNAL_LOCK)

    async def try_claim(self, key: str, expire: float) -> tuple[bool, dict | None]:
        """One attempt to claim a key for this process: (True, None) when it is ours now, (False, answer) when
        another process stored the answer meanwhile, (False, None) when another live process holds it.

        The claim is an in-flight marker (an atomic ``add``) holding the owner token; it is dropped by
        ``release``, lapses after ``expire`` seconds, and is taken over when its owner is provably gone."""
        marker = INFLIGHT + key
        while True:
            if self.store.add(marker, self.owner, expire=expire):
                hit = self.get(key)  # stored by the previous owner just before its marker went
                if hit is not None:
                    self.release(key)
                return hit is None, hit
            hit = self.get(key)
            if hit is not None:
                return False, hit
            owner = self.store.get(marker)
            if owner is None:
                continue
            if owner == self.owner:
                return True, None  # this process already calls it (another batch); no wait on ourselves
            if gone(owner):
                self.store.delete(marker)
                continue
            return False, None

    def release(self, key: str) -> None:
        """Drop this process's claim on a key (another's is left alone)."""
        marker = INFLIGHT + key
        with self.store.transact():
            if self.store.get(marker) == self.owner:
                self.store.delete(marker)

    async def arelease(self, key: str) -> None:
        """release off the event loop (an SQLite commit may take a while)."""
        await asyncio.to_thread(self.release, key)

    def store_answer(self, key: str, answer: dict) -> None:
        """Store an answer and drop this process's claim on it; a claim another process took over meanwhile (this
        one's lapsed) is left alone, and an answer already stored is kept (``lost`` holds the key)."""
        marker = INFLIGHT + key
        with self.store.transact():
            owner = self.store.get(marker)
            if owner == self.owner:
                self.set(key, answer)
                self.store.delete(marker)
            else:
                if owner is None and self.get(key) is None:
                    self.set(key, answer)
                self.lost.add(key)

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
# renew a claim only if it is still ours: 1 renewed, 0 lost
_RENEW = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"
)
# one round trip to claim: set the claim if absent; either way return whether we hold it, the answer if one was
# stored meanwhile, and the claim's owner
_CLAIM = """
local held = redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
return {held and 1 or 0, redis.call('get', KEYS[2]), redis.call('get', KEYS[1])}
"""
# one round trip to store an answer and drop our claim on it, fenced: 1 stored under our claim; 0 our claim had
# lapsed: stored only if nobody holds the key now and no answer is there yet
_STORE = """
local owner = redis.call('get', KEYS[1])
if owner == ARGV[1] then
  redis.call('set', KEYS[2], ARGV[2])
  redis.call('del', KEYS[1])
  return 1
end
if not owner then redis.call('set', KEYS[2], ARGV[2], 'NX') end
return 0
"""

_SCRIPTS = {name: (src, hashlib.sha1(src.encode()).hexdigest()) for name, src in
            (("claim", _CLAIM), ("store", _STORE), ("release", _RELEASE))}  # fmt: skip
"""The scripts the event loop runs, with their SHA1 (EVALSHA names a script by it)."""


def claim_key(key: str) -> str:
    """The Redis key of a claim: hash-tagged with its answer's key, so both fall in one Redis Cluster slot.

    >>> claim_key("ab12")
    'olakit:inflight:{olakit:answer:ab12}'
    """
    return f"{REDIS_CLAIM}{{{REDIS_ANSWER}{key}}}"


def key_of_claim(marker: str) -> str:
    """The cache key of a claim (``claim_key``'s inverse).

    >>> key_of_claim(claim_key("ab12"))
    'ab12'
    """
    return marker[len(REDIS_CLAIM) + 1 + len(REDIS_ANSWER) : -1]


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


class RedisCache(_Claims):
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
        self.owner = owner_token()
        self.lost: set[str] = set()
        """Keys whose claim this process lost (a pause longer than the lease): no longer renewed, and its answer not
        stored over another process's (see the module docstring)."""
        self._store = None
        self._scripts: dict = {}
        self._aclients: dict = {}  # event loop -> its redis.asyncio client: claims and stores never block
        self._held: set[str] = set()  # claims this process holds; one daemon thread renews them all
        self._queues: dict = {}  # event loop -> (script calls waiting for the next round trip, the task sending them)
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
            self._scripts = {
                name: client.register_script(src) for name, src in (("release", _RELEASE), ("renew", _RENEW))
            }
        return self._store

    async def _aclient(self):
        """This event loop's asyncio client (made on first use in each loop)."""
        import redis.asyncio

        loop = asyncio.get_running_loop()
        for other in [lp for lp in self._aclients if lp.is_closed()]:
            del self._aclients[other]
            self._queues.pop(other, None)
        if loop not in self._aclients:
            self.store  # noqa: B018 -- reachable, or one CacheError
            options = _connection_options(redis.asyncio.retry.Retry)
            self._aclients[loop] = redis.asyncio.Redis.from_url(self.url, **options)
        return self._aclients[loop]

    async def _script(self, name: str, keys: list[str], args: list):
        """Run one of the scripts (_SCRIPTS) on this event loop; returns its reply. The calls that arrive while a
        round trip is under way go together in the next one (one pipeline of EVALSHA): a burst of claims, stores
        and releases costs one connection and one round trip, not one each, and they run in the order made."""
        loop = asyncio.get_running_loop()
        queue, sender = self._queues.get(loop, ([], None))
        done = loop.create_future()
        queue.append((name, keys, args, done))
        if sender is None or sender.done():
            sender = loop.create_task(self._send(queue))
        self._queues[loop] = (queue, sender)
        return await done

    async def _send(self, queue: list) -> None:
        """Send what is queued, in pipelines, until nothing is (one sender per event loop). A script Redis does not
        hold (a restart, SCRIPT FLUSH) is loaded and its calls sent again; every other error goes to its caller."""
        from redis.exceptions import NoScriptError

        while queue:
            batch = queue[:]
            del queue[:]
            try:
                client = await self._aclient()
                replies = [None] * len(batch)
                pending = list(range(len(batch)))
                for _ in range(2):  # the second time after loading the scripts a restarted Redis lost
                    async with client.pipeline(transaction=False) as pipe:
                        for i in pending:
                            name, keys, args, _ = batch[i]
                            pipe.evalsha(_SCRIPTS[name][1], len(keys), *keys, *args)
                        sent = await pipe.execute(raise_on_error=False)
                    for i, reply in zip(pending, sent):
                        replies[i] = reply
                    pending = [i for i in pending if isinstance(replies[i], NoScriptError)]
                    if not pending:
                        break
                    for name in {batch[i][0] for i in pending}:
                        await client.script_load(_SCRIPTS[name][0])
                for (*_, done), reply in zip(batch, replies):
                    if not done.done():
                        done.set_exception(reply) if isinstance(reply, Exception) else done.set_result(reply)
            except (Exception, asyncio.CancelledError) as exc:  # each waiting call fails with it: nothing half-done
                for *_, done in batch + queue:
                    if not done.done():
                        done.cancel() if isinstance(exc, asyncio.CancelledError) else done.set_exception(exc)
                if isinstance(exc, asyncio.CancelledError):
                    del queue[:]
                    raise

    async def aclose(self) -> None:
        """Close this event loop's asyncio client (the LLM does before it stops its loop)."""
        self._queues.pop(asyncio.get_running_loop(), None)
        client = self._aclients.pop(asyncio.get_running_loop(), None)
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

    def journal(self, name: str) -> dict:
        """A batch journal (olakit.llm.batch): what was submitted and not yet collected; empty when none."""
        raw = self.store.get(REDIS_JOURNAL + name)
        return {} if raw is None else json.loads(raw)

    def set_journal(self, name: str, entries: dict) -> None:
        if entries:
            self.store.set(REDIS_JOURNAL + name, json.dumps(entries))
        else:
            self.store.delete(REDIS_JOURNAL + name)

    def journal_lock(self, name: str):
        """The lock every process holds while it reads the journal and submits (redis-py's Lock, lapsing after
        JOURNAL_LOCK s should its holder die): two processes never submit the same request."""
        return self.store.lock(REDIS_JOURNAL + "lock:" + name, timeout=JOURNAL_LOCK, sleep=0.05)

    def keys(self):
        """Every answer's key (claims left out)."""
        n = len(REDIS_ANSWER)
        return (k.decode()[n:] for k in self.store.scan_iter(match=REDIS_ANSWER + "*", count=1000))

    async def try_claim(self, key: str, expire: float) -> tuple[bool, dict | None]:
        """One attempt to claim a key for this process (SET NX with a lease, renewed while the call runs): (True,
        None) when it is ours, (False, answer) when another process, on any machine, stored it meanwhile, (False,
        None) when another process holds it. ``expire`` is not used: a lease lapses CLAIM_LEASE seconds after its
        owner stops renewing it. One round trip when the key is free."""
        marker, lease_ms = claim_key(key), int(CLAIM_LEASE * 1000)
        while True:
            held, raw, owner = await self._script("claim", [marker, REDIS_ANSWER + key], [self.owner, lease_ms])
            hit = None if raw is None else json.loads(raw)
            if held:
                if hit is not None:  # stored by the previous owner just before its claim went
                    await self.arelease(key)
                else:
                    self._held.add(marker)
                    if self._renewer is None:
                        self._renewer = threading.Thread(target=self._renew, args=(lease_ms,), daemon=True)
                        self._renewer.start()
                return hit is None, hit
            if hit is not None:
                return False, hit
            if owner is None:
                continue
            owner = owner.decode()
            if owner == self.owner:
                return True, None  # this process already calls it (another batch); no wait on ourselves
            if gone(owner):  # its owner here is provably gone: take it over
                await self._script("release", [marker], [owner])
                continue
            return False, None

    async def astore_answer(self, key: str, answer: dict) -> None:
        """Store an answer and drop this process's claim on it, fenced (_STORE); returns once it is stored."""
        self._held.discard(claim_key(key))
        raw = json.dumps(answer, ensure_ascii=False)
        if not await self._script("store", [claim_key(key), REDIS_ANSWER + key], [self.owner, raw]):
            self.lost.add(key)

    def _renew(self, lease_ms: int) -> None:
        """Renew every claim this process holds, each third of a lease, until the cache is closed."""
        while not self._closing.wait(CLAIM_LEASE / 3):
            self.renew_held(lease_ms)

    def renew_held(self, lease_ms: int) -> None:
        """One renewal of every claim held, fenced: a claim no longer this process's is dropped and counted lost."""
        held = list(self._held)
        if held:
            try:
                with self.store.pipeline(transaction=False) as pipe:
                    for marker in held:
                        self._scripts["renew"](keys=[marker], args=[self.owner, lease_ms], client=pipe)
                    renewed = pipe.execute()
            except Exception:  # Redis away: these leases lapse; each call's own outcome decides what is stored
                return
            for marker, ours in zip(held, renewed):
                if not ours and marker in self._held:  # lapsed, maybe taken over: ours no more
                    self._held.discard(marker)
                    self.lost.add(key_of_claim(marker))

    def release(self, key: str) -> None:
        """Drop this process's claim on a key (another's is left alone); blocking: see ``arelease``."""
        self._held.discard(claim_key(key))
        self.store  # noqa: B018
        self._scripts["release"](keys=[claim_key(key)], args=[self.owner])

    async def arelease(self, key: str) -> None:
        """release on this event loop's asyncio client: the loop goes on meanwhile."""
        self._held.discard(claim_key(key))
        await self._script("release", [claim_key(key)], [self.owner])

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
