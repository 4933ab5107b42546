"""The process's boto3 S3 client and the buckets the environment names.

boto3 reads its own configuration (``AWS_ENDPOINT_URL_S3``, credentials, region, profiles);
nothing here names an endpoint. Clients are cached per process, keyed by that environment, so
a worker reuses one connection pool and a test that changes the environment gets a new client.
"""

from __future__ import annotations

import threading
from typing import Any

import boto3
from botocore.config import Config
from pydantic import SecretStr

from core.settings import get_settings

# Settings of the variables boto3 reads for an S3 client; a change in any of them gets a new client.
_CLIENT_SETTINGS = (
    "aws_endpoint_url_s3",
    "aws_endpoint_url",
    "aws_default_region",
    "aws_region",
    "aws_profile",
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
)
_clients: dict[tuple[str | None, ...], Any] = {}
_clients_lock = threading.Lock()


def s3_client() -> Any:
    """This process's boto3 S3 client for the current AWS environment (created once, then cached)."""
    settings = get_settings()
    cache_key = tuple(_plain(getattr(settings, field)) for field in _CLIENT_SETTINGS)
    with _clients_lock:
        client = _clients.get(cache_key)
        if client is None:
            session = boto3.session.Session()
            client = session.client("s3", config=Config(retries={"mode": "standard", "max_attempts": 3}))
            _clients[cache_key] = client
        return client


def _plain(value: str | SecretStr | None) -> str | None:
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def tool_results_bucket() -> str | None:
    """``TOOL_RESULTS_BUCKET``, or None."""
    return get_settings().tool_results_bucket


def payloads_bucket() -> str | None:
    """Where big payloads and stored conversations go: ``TEMPORAL_PAYLOADS_BUCKET``, else
    ``TOOL_RESULTS_BUCKET``, else None."""
    return get_settings().payloads_bucket or tool_results_bucket()
