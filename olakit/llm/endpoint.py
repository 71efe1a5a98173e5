"""Where calls go, and what they cost. Configuration comes from the environment only, so a key never lands in a
notebook, the cache or a record:

- ``OLAKIT_BASE_URL``: the endpoint, e.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:8000/v1``.
  Unset: olakit serves its embedded model on 127.0.0.1 (olakit.llm.local) and uses that.
- ``OLAKIT_MODEL``: the model name the endpoint knows.
- ``OLAKIT_API_KEY`` (or ``OPENAI_API_KEY``): the key, if the endpoint wants one.
- ``OLAKIT_<ROLE>_BASE_URL``, ``OLAKIT_<ROLE>_MODEL``, ``OLAKIT_<ROLE>_API_KEY``: another endpoint for one role
  (ROLES), e.g. a reviewer or a judge on another model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from olakit.errors import OlakitError
from olakit.llm.local import embedded_spec, shared_server

PRICES: dict[str, tuple[float, float]] = {
    # USD per million tokens: (prompt, completion). Extend with register_price().
    "gpt-3.5-turbo": (0.50, 1.50),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
}
LOCAL_PRICE = (0.0, 0.0)
"""Price of the embedded model (it runs on your machine)."""


def register_price(model: str, prompt_per_mtok: float, completion_per_mtok: float) -> None:
    """Add or change a model's price (USD per million tokens)."""
    PRICES[model] = (float(prompt_per_mtok), float(completion_per_mtok))


ROLES = ("answerer", "reviewer", "judge", "direct")
"""Roles that may each have an endpoint of their own (the review loop's answerer and reviewer, a pairwise judge,
and the direct answer it is compared with)."""


class LLMError(OlakitError):
    """An LLM endpoint is misconfigured or unusable."""


@dataclass(frozen=True)
class Endpoint:
    """Where calls go. ``identity`` (not the key) is what the cache key sees."""

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    identity: str = ""
    local: bool = False

    def __post_init__(self):
        if not self.identity:
            object.__setattr__(self, "identity", f"{self.base_url.rstrip('/')}|{self.model}")

    @classmethod
    def from_env(cls, role: str | None = None) -> Endpoint:
        """The configured endpoint, or the embedded model when OLAKIT_BASE_URL is unset.

        A ``role`` (ROLES: answerer, reviewer, judge, direct) takes its own endpoint from ``OLAKIT_<ROLE>_BASE_URL``,
        ``OLAKIT_<ROLE>_MODEL`` and ``OLAKIT_<ROLE>_API_KEY`` when its base URL is set, else the configured one."""
        if role is not None and role not in ROLES:
            raise LLMError(f"unknown role {role!r}; known: {', '.join(ROLES)}")
        prefix = f"OLAKIT_{role.upper()}_" if role and os.environ.get(f"OLAKIT_{role.upper()}_BASE_URL") else "OLAKIT_"
        base_url = os.environ.get(f"{prefix}BASE_URL", "").strip()
        key = os.environ.get(f"{prefix}API_KEY") or os.environ.get("OPENAI_API_KEY") or ""
        if base_url:
            model = os.environ.get(f"{prefix}MODEL", "").strip()
            if not model:
                raise LLMError(f"{prefix}BASE_URL is set but {prefix}MODEL is not; set the model name it serves")
            return cls(base_url=base_url, model=model, api_key=key)
        return cls.embedded()

    @classmethod
    def embedded(cls) -> Endpoint:
        """The embedded model served by this process on 127.0.0.1 (started on first use)."""
        srv = shared_server()
        # the port changes between runs; the weights do not: identify the endpoint by the weights
        return cls(
            base_url=srv.base_url,
            model=srv.model,
            local=True,
            identity=f"olakit-embedded|{embedded_spec()['sha256'][:16]}|{srv.model}",
        )

    def price(self) -> tuple[float, float] | None:
        """USD per million (prompt, completion) tokens, or None when the model has no known price."""
        return LOCAL_PRICE if self.local else PRICES.get(self.model)

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """USD for one call; None when the price or a token count is unknown.

        >>> Endpoint("http://x/v1", "gpt-4o").cost(1_000_000, 0)
        2.5
        """
        price = self.price()
        if price is None or prompt_tokens is None or completion_tokens is None:
            return None
        return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6
