"""Named model endpoints: ``{P}_OPENAI_BASE_URL``, ``{P}_OPENAI_API_KEY`` and
``{P}_OPENAI_TIMEOUT_SECONDS`` for any upper-case prefix ``P``, read from the same environment as
:mod:`core.settings` (and again whenever it changed). Only an endpoint's name travels in a run; its
URL and key stay on the worker.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field, PositiveFloat, SecretStr, ValidationError

from core.settings import Settings, SettingsError, current_environment, describe_errors

#: The name of a model endpoint: an upper-case prefix of its variables (``SUMMARY`` reads
#: ``SUMMARY_OPENAI_BASE_URL``, ``SUMMARY_OPENAI_API_KEY``, ``SUMMARY_OPENAI_TIMEOUT_SECONDS``).
ENDPOINT_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")
_ENDPOINT_VARIABLE = re.compile(rf"({ENDPOINT_NAME.pattern})_OPENAI_(BASE_URL|API_KEY|TIMEOUT_SECONDS)")


class ModelEndpoint(BaseModel):
    """One OpenAI-compatible endpoint a worker can call.

    :param name: None for the worker's own (``OPENAI_*``); else the prefix of its variables.
    :param base_url: ``{name}_OPENAI_BASE_URL`` (None: OpenAI's).
    :param api_key: ``{name}_OPENAI_API_KEY``.
    :param timeout_seconds: ``{name}_OPENAI_TIMEOUT_SECONDS``, else ``OPENAI_TIMEOUT_SECONDS``.
    :param from_environment: The fields read from the endpoint's own variables.
    """

    model_config = {"frozen": True}

    name: str | None = None
    base_url: str | None = Field(None, description="base URL")
    api_key: SecretStr | None = Field(None, description="API key (secret)")
    timeout_seconds: PositiveFloat = Field(120.0, description="timeout of one call in seconds")
    from_environment: frozenset[str] = frozenset()

    def is_set(self, field: str) -> bool:
        """Whether ``field`` came from the endpoint's own variable (else a default)."""
        return field in self.from_environment

    @property
    def configured(self) -> bool:
        """Whether its URL or key is set (a named endpoint with neither is not configured)."""
        return bool(self.base_url or self.api_key)

    def env_name(self, field: Literal["base_url", "api_key", "timeout_seconds"]) -> str:
        """The environment variable of ``field`` for this endpoint."""
        return f"{self.name + '_' if self.name else ''}OPENAI_{field.upper()}"


def model_endpoint(name: str | None = None) -> ModelEndpoint:
    """The endpoint ``name`` names (None: the worker's own, ``OPENAI_*``); one the environment
    does not configure has neither URL nor key (:attr:`ModelEndpoint.configured` is False).

    :raises ValueError: ``name`` is not an upper-case prefix (letters, digits, single underscores).
    :raises SettingsError: As :func:`get_settings`.
    """
    settings, endpoints = _current()
    if name is None:
        return ModelEndpoint(
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key,
            timeout_seconds=settings.openai_timeout_seconds,
        )
    if not ENDPOINT_NAME.fullmatch(name):
        raise ValueError(f"Model endpoint name {name!r} must be an upper-case prefix such as 'SUMMARY'.")
    return endpoints.get(name) or ModelEndpoint(name=name, timeout_seconds=settings.openai_timeout_seconds)


def named_endpoints() -> list[ModelEndpoint]:
    """Every named endpoint the environment configures (any ``{P}_OPENAI_BASE_URL``, ``_API_KEY``
    or ``_TIMEOUT_SECONDS`` is set), by name.

    :raises SettingsError: As :func:`get_settings`.
    """
    return list(_current()[1].values())


def _read_endpoint(name: str, settings: Settings, environ: dict[str, str]) -> ModelEndpoint:
    """The endpoint ``name`` from ``environ`` (its timeout defaults to ``OPENAI_TIMEOUT_SECONDS``)."""
    values: dict[str, Any] = {
        field: raw
        for field in ("base_url", "api_key", "timeout_seconds")
        if (raw := environ.get(f"{name}_OPENAI_{field.upper()}", "").strip())
    }
    read = frozenset(values)
    values.setdefault("timeout_seconds", settings.openai_timeout_seconds)
    try:
        return ModelEndpoint(name=name, from_environment=read, **values)
    except ValidationError as err:
        variables = {"timeout_seconds": (f"{name}_OPENAI_TIMEOUT_SECONDS", "a number of seconds > 0", False)}
        raise SettingsError(describe_errors(err, variables)) from None


_cache: tuple[tuple[tuple[str, str], ...], Settings, dict[str, ModelEndpoint]] | None = None


def _current() -> tuple[Settings, dict[str, ModelEndpoint]]:
    """The settings and every named endpoint of the current environment (cached while it is unchanged)."""
    global _cache
    environ, settings = current_environment()
    cached = _cache
    if cached is not None and cached[0] is environ and cached[1] is settings:
        return settings, cached[2]
    variables = dict(environ)
    names = sorted({match.group(1) for variable in variables if (match := _ENDPOINT_VARIABLE.fullmatch(variable))})
    endpoints = {name: _read_endpoint(name, settings, variables) for name in names}
    _cache = (environ, settings, endpoints)
    return settings, endpoints
