"""Which failures are retried, and how long to wait: named transient errors only (408/409/429/5xx, timeouts,
connection errors, malformed 2xx bodies), a bounded number of times, with exponential backoff and jitter, or the
server's ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms`` when it sends one.
"""

from __future__ import annotations

import email.utils
import random
import time

RETRYABLE_STATUS = (408, 409, 429, 500, 502, 503, 504)
MAX_WAIT = 60.0
"""The longest wait a server's Retry-After can impose."""


REFUSED_ATTEMPTS, REFUSED_WAIT = 2, 0.5
"""A refused connection (nothing listens at the URL) is tried once more after half a second (a server that is
just starting), then the call fails saying so: no backoff, no five attempts."""


class MalformedResponse(Exception):
    """The endpoint answered 2xx with a body that is not a chat completion (retried)."""


class ConnectionRefused(Exception):
    """Nothing accepts connections at the endpoint's URL."""


class Stalled(Exception):
    """The local server made no progress on a queued call for the client's timeout (olakit.llm.client)."""


def refused(exc: BaseException) -> bool:
    """Whether a failure is a refused connection, whatever the HTTP transport wraps it in (openai reports one as
    APITimeoutError over aiohttp, APIConnectionError over httpx)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, ConnectionRefusedError):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def retryable(exc: BaseException) -> bool:
    """Whether a failed call may succeed if made again."""
    import openai

    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, MalformedResponse, Stalled)):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code in RETRYABLE_STATUS


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After value: delay-seconds or an HTTP date; None when absent or unreadable.

    >>> parse_retry_after("2")
    2.0
    >>> parse_retry_after("Wed, 21 Oct 2015 07:28:05 GMT", now=1445412480.0)
    5.0
    """
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def retry_after(exc: BaseException) -> float | None:
    """The wait a failed response asks for (``retry-after-ms``, then ``Retry-After``), or None."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    return parse_retry_after(headers.get("retry-after"))


def backoff(attempt: int, exc: BaseException | None, base: float, cap: float) -> float:
    """Seconds before try ``attempt + 1``: the server's Retry-After (at most MAX_WAIT), else exponential with jitter."""
    after = retry_after(exc) if exc is not None else None
    if after is not None:
        return min(after, MAX_WAIT)
    wait = min(cap, base * 2 ** (attempt - 1))
    return wait * (0.5 + random.random() / 2)
