"""The process's boto3 S3 client and the buckets the environment names.

boto3 reads its own configuration (``AWS_ENDPOINT_URL_S3``, credentials, region, profiles);
nothing here names an endpoint. Clients are cached per process, keyed by that environment, so
a worker reuses one connection pool and a test that changes the environment gets a new client.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import boto3
from botocore.config import Config

# Environment variables boto3 reads for an S3 client; a change in any of them gets a new client.
_CLIENT_ENV = (
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
)
_clients: dict[tuple[str | None, ...], Any] = {}
_clients_lock = threading.Lock()


def s3_client() -> Any:
    """This process's boto3 S3 client for the current AWS environment (created once, then cached)."""
    cache_key = tuple(os.environ.get(name) for name in _CLIENT_ENV)
    with _clients_lock:
        client = _clients.get(cache_key)
        if client is None:
            session = boto3.session.Session()
            client = session.client("s3", config=Config(retries={"mode": "standard", "max_attempts": 3}))
            _clients[cache_key] = client
        return client


def tool_results_bucket() -> str | None:
    """``TOOL_RESULTS_BUCKET``, or None."""
    return os.environ.get("TOOL_RESULTS_BUCKET") or None


def payloads_bucket() -> str | None:
    """Where big payloads and stored conversations go: ``TEMPORAL_PAYLOADS_BUCKET``, else
    ``TOOL_RESULTS_BUCKET``, else None."""
    return os.environ.get("TEMPORAL_PAYLOADS_BUCKET") or tool_results_bucket()
