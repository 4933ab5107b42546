"""The process's S3 clients and the buckets the environment names.

boto3 reads its own configuration (``AWS_ENDPOINT_URL_S3``, credentials, region, profiles);
nothing here names an endpoint. The conversation segments, written every step, go through an
``obstore`` store built from what boto3 resolved (:func:`object_store`). Clients are cached per
process, keyed by that environment, so a worker reuses one connection pool and a test that
changes the environment gets a new client.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError
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


def bucket_region(bucket: str) -> str:
    """The region S3 names for ``bucket`` (its ``x-amz-bucket-region``, read by a HEAD through
    boto3, which the answer carries even when refused), else ``us-east-1``."""
    try:
        response = s3_client().head_bucket(Bucket=bucket)
        headers = response["ResponseMetadata"]["HTTPHeaders"]
    except ClientError as exc:
        headers = exc.response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
    return headers.get("x-amz-bucket-region") or "us-east-1"


class S3ConfigurationError(RuntimeError):
    """The environment does not give what an S3 request needs (credentials)."""


#: obstore's retries as the boto3 client's (3 attempts, none started after 20 s), and a bound on
#: each request, so a segment write never hangs the model activity.
_OBJECT_STORE_RETRIES = {"max_retries": 2, "retry_timeout": timedelta(seconds=20)}
_OBJECT_STORE_OPTIONS = {"connect_timeout": timedelta(seconds=5), "timeout": timedelta(seconds=30)}
_object_stores: dict[tuple[Any, ...], Any] = {}


def object_store(bucket: str) -> Any:
    """This process's ``obstore`` S3Store for ``bucket``, at the endpoint, region and credentials
    boto3 resolves for :func:`s3_client` (created once per environment and bucket, then cached).

    For requests on a step's path (the conversation segments): obstore signs and sends in Rust, a
    2 KB PUT costing about 0.4 ms of CPU against boto3's 2.3 ms. Everything else uses boto3.

    :raises S3ConfigurationError: When boto3 finds no credentials.
    """
    from obstore.auth.boto3 import Boto3CredentialProvider
    from obstore.store import S3Store

    settings = get_settings()
    cache_key = (*(_plain(getattr(settings, field)) for field in _CLIENT_SETTINGS), bucket)
    with _clients_lock:
        store = _object_stores.get(cache_key)
    if store is not None:
        return store
    meta = s3_client().meta  # boto3's resolved endpoint and region
    session = boto3.session.Session()
    if session.get_credentials() is None:
        raise S3ConfigurationError(
            f"No AWS credentials for bucket {bucket!r}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
            "AWS_PROFILE, or give the worker a role."
        )
    options: dict[str, Any] = dict(_OBJECT_STORE_OPTIONS)
    config: dict[str, Any] = {"region": meta.region_name or "us-east-1"}
    if settings.aws_endpoint_url_s3 or settings.aws_endpoint_url:  # moto, MinIO, a proxy: path-style
        config["endpoint"] = meta.endpoint_url
        options["allow_http"] = meta.endpoint_url.startswith("http://")
    else:
        config["virtual_hosted_style_request"] = True
        if session.region_name is None:  # boto3 follows S3's region redirects; obstore needs the region
            config["region"] = bucket_region(bucket)
    store = S3Store(
        bucket,
        config=config,
        client_options=options,
        retry_config=_OBJECT_STORE_RETRIES,
        credential_provider=Boto3CredentialProvider(session),
    )
    with _clients_lock:
        return _object_stores.setdefault(cache_key, store)
