"""Configuration checks a worker and a client run before any run depends on them.

A missing search attribute or bucket must not surface as a workflow task that fails and retries
forever, or as an offload that quietly keeps results inline. These checks run at worker start
(``AgentPlugin``) and, for search attributes, when a run starts (``Agent.start``), and raise
:class:`ConfigurationError` with the command or setting that fixes it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from core.s3 import s3_client
from core.settings import ConfigurationError

__all__ = [
    "ConfigurationError",
    "check_bucket",
    "check_search_attributes",
    "missing_search_attributes",
    "search_attribute_command",
]

# Search attributes already seen registered, per client (the check costs one RPC, once).
_verified: weakref.WeakKeyDictionary[Client, set[str]] = weakref.WeakKeyDictionary()


def search_attribute_command(namespace: str, name: str, value_type: str) -> str:
    """The ``temporal`` CLI command that registers a search attribute."""
    return f"temporal operator search-attribute create --namespace {namespace} --name {name} --type {value_type}"


async def missing_search_attributes(client: Client, required: Mapping[str, str]) -> dict[str, str]:
    """The entries of ``required`` (name -> type, e.g. ``"Bool"``) the client's namespace lacks."""
    known = _verified.setdefault(client, set())
    wanted = {name: kind for name, kind in required.items() if name not in known}
    if not wanted:
        return {}
    try:
        response = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace)
        )
    except RPCError as err:
        if err.status != RPCStatusCode.UNIMPLEMENTED:
            raise
        # A server without the operator API (Temporal's time-skipping test server) cannot be
        # asked; it accepts the attributes its environment was started with.
        known.update(wanted)
        return {}
    registered = {name: IndexedValueType.Name(kind) for name, kind in response.custom_attributes.items()}
    missing = {}
    for name, kind in wanted.items():
        if registered.get(name, "").removeprefix("INDEXED_VALUE_TYPE_").lower() == kind.lower():
            known.add(name)
        else:
            missing[name] = kind
    return missing


async def check_search_attributes(client: Client, required: Mapping[str, str], needed_by: str, hint: str = "") -> None:
    """Raise unless the namespace has every search attribute in ``required``.

    :param needed_by: What needs them, for the message (e.g. "DurableConfirmationStrategy").
    :param hint: A last sentence for the message (another way out).
    :raises ConfigurationError: With the exact command for each missing attribute.
    """
    missing = await missing_search_attributes(client, required)
    if missing:
        commands = "\n  ".join(search_attribute_command(client.namespace, n, k) for n, k in missing.items())
        raise ConfigurationError(
            f"Namespace '{client.namespace}' has no search attribute {', '.join(missing)}, which "
            f"{needed_by} sets while a run waits for a person. Register it once:\n  {commands}\n"
            f"(agent dev and the test stack register it themselves.){' ' + hint if hint else ''}"
        )


def _endpoint(client: Any) -> str:
    return client.meta.endpoint_url or "AWS S3"


async def check_bucket(bucket: str, setting: str) -> None:
    """Raise unless ``bucket`` exists and the S3 endpoint answers.

    :param setting: The environment variable that named the bucket, for the message.
    :raises ConfigurationError: Naming the bucket, the endpoint and the fix.
    """
    client = s3_client()
    try:
        await asyncio.to_thread(client.head_bucket, Bucket=bucket)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in ("404", "NoSuchBucket", "NotFound"):
            raise ConfigurationError(
                f"S3 bucket '{bucket}' ({setting}) does not exist at {_endpoint(client)}. Create it "
                f"(aws s3 mb s3://{bucket}, with --endpoint-url for MinIO) or point {setting} at an existing bucket."
            ) from exc
        raise ConfigurationError(
            f"S3 bucket '{bucket}' ({setting}) at {_endpoint(client)} refused access ({code or exc}); "
            "check the AWS_* credentials."
        ) from exc
    except BotoCoreError as exc:
        raise ConfigurationError(
            f"The S3 endpoint {_endpoint(client)} for bucket '{bucket}' ({setting}) did not answer: {exc}. "
            "Check AWS_ENDPOINT_URL_S3."
        ) from exc
