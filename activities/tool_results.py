"""Store I/O for offloaded tool results, as activities (the hook only holds store descriptors).

Register ``TOOL_RESULT_ACTIVITIES`` on the worker. Both activities are idempotent: a retry
writes the same key with the same content, or reads the same object again.

boto3 clients are cached per process (:func:`s3_client`), keyed by the environment that
configures them, so a worker reuses one connection pool.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

from pydantic import BaseModel
from temporalio import activity
from temporalio.exceptions import ApplicationError

STORE_TOOL_RESULT = "store_tool_result"
LOAD_TOOL_RESULT = "load_tool_result"

#: Error type of store failures that retrying does not fix (bad key, reference of another run).
NON_RETRYABLE_STORE_ERROR = "ToolResultStoreRefused"

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
    """This process's boto3 S3 client for the current AWS environment (created once, then cached).

    boto3 reads its own configuration (``AWS_ENDPOINT_URL_S3``, credentials, region, profiles);
    nothing here names an endpoint.
    """
    cache_key = tuple(os.environ.get(name) for name in _CLIENT_ENV)
    with _clients_lock:
        client = _clients.get(cache_key)
        if client is None:
            import boto3
            from botocore.config import Config

            session = boto3.session.Session()
            client = session.client("s3", config=Config(retries={"mode": "standard", "max_attempts": 3}))
            _clients[cache_key] = client
        return client


class StoreToolResultInput(BaseModel):
    """Input of ``store_tool_result``.

    :param store: The store descriptor (``store.to_dict()``, already scoped to the run).
    :param key: The result's key in the store.
    :param content: The result text.
    """

    store: dict[str, Any]
    key: str
    content: str


class LoadToolResultInput(BaseModel):
    """Input of ``load_tool_result``.

    :param store: The store descriptor (``store.to_dict()``, scoped to the reading run).
    :param reference: A reference the store returned from a write.
    """

    store: dict[str, Any]
    reference: str


def _store(descriptor: dict[str, Any]) -> Any:
    from hooks.serialization import object_from_dict

    return object_from_dict(descriptor)


def _refused(exc: ValueError) -> ApplicationError:
    return ApplicationError(str(exc), type=NON_RETRYABLE_STORE_ERROR, non_retryable=True)


async def write_to_store(descriptor: dict[str, Any], key: str, content: str) -> str:
    """Write ``content`` under ``key`` in the store ``descriptor`` names; returns the reference.

    :raises ValueError: For a key the store refuses (outside the run, traversal).
    """
    return await asyncio.to_thread(_store(descriptor).write, key=key, content=content)


@activity.defn(name=STORE_TOOL_RESULT)
async def store_tool_result(request: StoreToolResultInput) -> str:
    """Write one result; returns its reference. A bad key is not retried; I/O errors are."""
    try:
        return await write_to_store(request.store, request.key, request.content)
    except ValueError as exc:
        raise _refused(exc) from exc


@activity.defn(name=LOAD_TOOL_RESULT)
async def load_tool_result(request: LoadToolResultInput) -> str:
    """Read one result. A reference outside the run's store is refused and not retried."""
    try:
        store = _store(request.store)
        return await asyncio.to_thread(store.read, request.reference)
    except ValueError as exc:
        raise _refused(exc) from exc


#: Register these on the worker: ``Worker(..., activities=[..., *TOOL_RESULT_ACTIVITIES])``.
TOOL_RESULT_ACTIVITIES = [store_tool_result, load_tool_result]
