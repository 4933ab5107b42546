"""What a failed model call says: the HTTP status classified as retryable or not, and which
endpoint (URL and the variable it came from) was called, without credentials.
"""

from __future__ import annotations

from datetime import timedelta

import openai
from temporalio.exceptions import ApplicationError

from core.model_endpoints import model_endpoint
from core.wire import NON_RETRYABLE_MODEL_ERROR

#: ``ApplicationError.type`` of a failure a retry may fix: 429, 5xx, no connection (retried, within the ceiling).
TRANSIENT_MODEL_ERROR = "ModelTransientError"

#: Status codes no retry can fix: bad request, bad key, forbidden, unknown model, unprocessable.
CLIENT_ERROR_STATUSES = frozenset({400, 401, 403, 404, 422})
#: Of those, the ones that mean this worker's configuration is wrong (key, endpoint, model name),
#: with what the endpoint said by them.
_MISCONFIGURED_STATUSES = {
    401: "it refused the API key",
    403: "it refused the key access",
    404: "no such model there, or no such path",
}
#: Where the ``openai`` SDK sends requests when ``OPENAI_BASE_URL`` is not set.
_SDK_DEFAULT_BASE_URL = "https://api.openai.com/v1"


def describe_endpoint(client: openai.AsyncOpenAI, endpoint: str | None) -> str:
    """The URL a client calls and where it came from, e.g. ``http://127.0.0.1:8000/v1 (from OPENAI_BASE_URL)``.

    Credentials in the URL (user info, query) are left out: the text goes into the run's history.
    """
    full = str(client.base_url).rstrip("/")
    url = str(client.base_url.copy_with(userinfo=b"", query=None)).rstrip("/")
    configured_endpoint = model_endpoint(endpoint)
    variable = configured_endpoint.env_name("base_url")
    configured = configured_endpoint.base_url
    if configured and configured.rstrip("/") == full:
        return f"{url} (from {variable})"
    if not configured and url == _SDK_DEFAULT_BASE_URL:
        return f"{url} (OpenAI's, the default: {variable} is not set)"
    return url  # a client handed to ModelActivities


def _misconfiguration_error(
    exc: openai.APIStatusError, model: str, endpoint: str | None, client: openai.AsyncOpenAI
) -> ApplicationError:
    """A 401/403/404: the key, the endpoint or the model name is wrong; says which to check."""
    prefix = f"{endpoint}_" if endpoint else ""
    status = exc.status_code
    check = "the model name, " if status == 404 else f"{prefix}OPENAI_API_KEY, "
    # The endpoint's own words, without the SDK's "Error code: 401 - " in front.
    said = exc.body.get("message") if isinstance(exc.body, dict) else None
    said = str(said or exc.message).rstrip(".")
    return ApplicationError(
        f"The model endpoint {describe_endpoint(client, endpoint)} answered HTTP {status} "
        f"({_MISCONFIGURED_STATUSES[status]}) for model {model!r}: {said}. "
        f"Retrying cannot fix this: check {check}"
        f"and {prefix}OPENAI_BASE_URL (is it the endpoint you meant?) on every worker of the task queue; "
        "with `agent dev`, `source` the env.sh in its data directory (.agent-dev/env.sh by default) in the "
        "worker's shell, so OPENAI_BASE_URL points at the scripted model.",
        type=NON_RETRYABLE_MODEL_ERROR,
        non_retryable=True,
    )


def classify(exc: openai.APIStatusError, model: str, endpoint: str | None, client: openai.AsyncOpenAI) -> Exception:
    """The ``ApplicationError`` an HTTP error status of the endpoint becomes: non-retryable for a
    client error (saying what to check for 401/403/404), retryable honouring ``Retry-After`` else."""
    status = exc.status_code
    if status in _MISCONFIGURED_STATUSES:
        return _misconfiguration_error(exc, model, endpoint, client)
    if status in CLIENT_ERROR_STATUSES:
        return ApplicationError(
            f"The model endpoint rejected the request with HTTP {status}: {exc.message}. "
            "Retrying cannot fix this; check the model name, API key and request.",
            type=NON_RETRYABLE_MODEL_ERROR,
            non_retryable=True,
        )
    delay = None
    retry_after = exc.response.headers.get("retry-after") if exc.response is not None else None
    if retry_after:
        try:
            delay = timedelta(seconds=float(retry_after))
        except ValueError:
            delay = None
    return ApplicationError(
        f"Model endpoint returned HTTP {status}: {exc.message}", type=TRANSIENT_MODEL_ERROR, next_retry_delay=delay
    )
