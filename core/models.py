"""Which model an agent calls, and where: ``Model`` (one model at one named endpoint) and
``Fallback`` (several, tried in order).

Only names travel in a run: a model's name and its endpoint's *name* (an upper-case prefix such
as ``PRIMARY``). The worker resolves the name to ``PRIMARY_OPENAI_BASE_URL`` and
``PRIMARY_OPENAI_API_KEY`` (``core.settings.model_endpoint``), so URLs and keys never enter a
history. No endpoint name means the worker's own ``OPENAI_BASE_URL``/``OPENAI_API_KEY``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from core.model_endpoints import ENDPOINT_NAME


class Model(BaseModel):
    """One model at one endpoint.

    :param name: The model's name at the endpoint (``"gpt-4o"``, ``"claude-sonnet-4"``).
    :param endpoint: The endpoint's name (``"PRIMARY"`` for ``PRIMARY_OPENAI_BASE_URL`` and
        ``PRIMARY_OPENAI_API_KEY`` on the worker); None: the worker's own ``OPENAI_*``.
    :raises ValueError: For an empty name, or an endpoint that is not an upper-case prefix.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    endpoint: str | None = None

    def __init__(self, name: str | None = None, endpoint: str | None = None, **data: Any) -> None:
        if name is not None:
            data["name"] = name
        super().__init__(endpoint=endpoint, **data)

    @field_validator("name")
    @classmethod
    def _named(cls, name: str) -> str:
        if not name.strip():
            raise ValueError("a model needs a name, e.g. Model('gpt-4o', endpoint='PRIMARY')")
        return name

    @field_validator("endpoint")
    @classmethod
    def _endpoint_name(cls, endpoint: str | None) -> str | None:
        if endpoint is not None and not ENDPOINT_NAME.fullmatch(endpoint):
            raise ValueError(
                f"endpoint {endpoint!r} must be an upper-case prefix such as 'PRIMARY' (the worker reads "
                "PRIMARY_OPENAI_BASE_URL and PRIMARY_OPENAI_API_KEY)"
            )
        return endpoint

    def describe(self) -> str:
        """``gpt-4o at PRIMARY`` (or ``at the worker's endpoint``), for messages and ``agent watch``."""
        return f"{self.name} at {self.endpoint or 'the default endpoint'}"


class Fallback:
    """Models tried in order within one model call: the next one answers when the one before
    fails in a way another endpoint may not (no connection, a timeout, HTTP 429 or 5xx, a body
    that is not a completion). A 400/401/403/404/422 stops the call at once: it is a mistake in
    the request or the configuration, which another endpoint would not fix.

    :param models: ``Model`` values, ``(name, endpoint)`` pairs or plain names, first choice
        first; at least two.
    :raises ValueError: For fewer than two models, or a bad name or endpoint.
    """

    def __init__(self, models: Sequence[Model | tuple[str, str | None] | str]) -> None:
        choices = [as_model(m) for m in models]
        if len(choices) < 2:
            raise ValueError(f"Fallback needs at least two models to fall back between, got {len(choices)}.")
        self.models: list[Model] = choices

    def __repr__(self) -> str:
        return f"Fallback({[(m.name, m.endpoint) for m in self.models]!r})"


def as_model(value: Model | tuple[str, str | None] | str, endpoint: str | None = None) -> Model:
    """``value`` as a :class:`Model` (a plain name takes ``endpoint``).

    :raises ValueError: For anything else, or a bad name or endpoint.
    """
    if isinstance(value, Model):
        return value
    if isinstance(value, str):
        return Model(value, endpoint)
    if isinstance(value, tuple) and len(value) == 2:
        return Model(value[0], value[1])
    raise ValueError(f"Expected a model name, a (name, endpoint) pair or a Model, got {value!r}.")
