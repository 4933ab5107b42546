"""The project's data converter: pydantic for every payload and, with a bucket configured,
Temporal's ``ExternalStorage`` on S3 for every payload over a threshold, so no big payload
enters workflow history (history keeps a small reference; the bytes live in S3).

Worker, client, CLI and tests all call :func:`agent_data_converter`. The configuration comes
from the environment, and every process of a deployment must see the same one (a worker
without the bucket cannot read the references a client stored):

- ``TEMPORAL_PAYLOADS_BUCKET`` (falling back to ``TOOL_RESULTS_BUCKET``): the bucket; unset
  means plain ``pydantic_data_converter``. The bucket must exist.
- ``TEMPORAL_PAYLOAD_THRESHOLD_BYTES``: payloads of at least this many bytes go to S3
  (default 262144, 256 KiB; 0 stores every payload).
- boto3's own variables (``AWS_ENDPOINT_URL_S3``, credentials, region) configure the client.

With ``AGENT_PAYLOAD_KEYS`` set, every payload is encrypted (core/codec.py) before it leaves the
process: the codec runs before external storage, so the objects in S3 are ciphertext too, and
failure messages and stack traces move into the failure's encoded attributes, encrypted as well.
What stays plain: search attributes, the external-storage references (bucket, key, size) and
Temporal's own fields (ids, types, timestamps).

Objects are written under ``v0/...`` keys by ``S3StorageDriver`` (content-addressed per
workflow or activity); expire them with a lifecycle rule on that prefix no shorter than the
longest run plus its retention period.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError
from temporalio.api.failure.v1 import Failure
from temporalio.contrib.aws.s3driver import S3StorageDriverClient
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, DefaultFailureConverterWithEncodedAttributes, ExternalStorage

from core.codec import EncryptionCodec, parse_payload_keys
from core.payload_storage import ScopedS3StorageDriver
from core.s3 import payloads_bucket, s3_client
from core.settings import DEFAULT_PAYLOAD_THRESHOLD_BYTES as DEFAULT_PAYLOAD_THRESHOLD_BYTES
from core.settings import get_settings


class Boto3StorageDriverClient(S3StorageDriverClient):
    """``S3StorageDriverClient`` over boto3; blocking calls run in a thread.

    :param client: A boto3 S3 client; by default the process's cached one
        (``core.s3.s3_client``), so boto3's environment at construction decides
        endpoint, credentials and region.
    """

    def __init__(self, client: Any | None = None) -> None:
        self.client = client if client is not None else s3_client()

    def _client(self) -> Any:
        return self.client

    async def put_object(self, *, bucket: str, key: str, data: bytes) -> None:
        """Upload ``data`` to ``bucket``/``key``."""
        await asyncio.to_thread(self._client().put_object, Bucket=bucket, Key=key, Body=data)

    async def object_exists(self, *, bucket: str, key: str) -> bool:
        """HEAD the object: False on 404, the error otherwise."""
        try:
            await asyncio.to_thread(self._client().head_object, Bucket=bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True

    async def get_object(self, *, bucket: str, key: str) -> bytes:
        """Download the object's bytes."""

        def download() -> bytes:
            return self._client().get_object(Bucket=bucket, Key=key)["Body"].read()

        return await asyncio.to_thread(download)

    def describe(self) -> Mapping[str, str]:
        """Endpoint and region, appended by the driver to its error messages."""
        meta = self._client().meta
        return {"endpoint": meta.endpoint_url or "", "client_region": meta.region_name or ""}


def payload_threshold_bytes() -> int:
    """``TEMPORAL_PAYLOAD_THRESHOLD_BYTES`` (default 256 KiB).

    :raises core.settings.SettingsError: (a ValueError) If it is not a non-negative integer.
    """
    return get_settings().payload_threshold_bytes


def payload_codec() -> EncryptionCodec:
    """The codec of ``AGENT_PAYLOAD_KEYS`` (with none set, one that encrypts nothing and refuses
    encrypted payloads naming their key id).

    :raises core.settings.SettingsError: (a ValueError) If ``AGENT_PAYLOAD_KEYS`` is malformed.
    """
    keys = get_settings().payload_keys
    return EncryptionCodec(parse_payload_keys(keys.get_secret_value()) if keys is not None else {})


def agent_data_converter() -> DataConverter:
    """The data converter every client and worker of this project uses (see the module docstring).

    :raises core.settings.SettingsError: (a ValueError) If ``TEMPORAL_PAYLOAD_THRESHOLD_BYTES`` or
        ``AGENT_PAYLOAD_KEYS`` is malformed.
    """
    codec = payload_codec()
    changes: dict[str, Any] = {"payload_codec": codec}
    if codec.encrypting_key_id is not None:
        changes["failure_converter_class"] = DefaultFailureConverterWithEncodedAttributes
    bucket = payloads_bucket()
    if bucket is not None:
        # scoped: a claim in history is client data; the driver reads only its own bucket and namespace
        driver = ScopedS3StorageDriver(
            client=Boto3StorageDriverClient(), bucket=bucket, namespace=get_settings().temporal_namespace
        )
        changes["external_storage"] = ExternalStorage(
            drivers=[driver], payload_size_threshold=payload_threshold_bytes()
        )
    return dataclasses.replace(pydantic_data_converter, **changes)


async def readable_failure(failure: Failure, converter: DataConverter) -> Failure:
    """A copy of ``failure`` with the messages and stack traces its encoded attributes hold (the
    failure converter moves them there when payloads are encrypted) put back, at every level of
    its cause chain. A level this process cannot decode keeps its placeholder, followed by why.

    :param converter: The data converter (with the codec) of the process reading it.
    """
    readable = Failure()
    readable.CopyFrom(failure)
    level = readable
    while True:
        if level.HasField("encoded_attributes"):
            try:
                [attributes] = await converter.decode([level.encoded_attributes])
            except Exception as exc:  # a key this process lacks: say so instead of "Encoded failure"
                level.message = f"{level.message} ({exc})"
            else:
                if isinstance(attributes, dict):
                    level.message = str(attributes.get("message", level.message))
                    level.stack_trace = str(attributes.get("stack_trace", level.stack_trace))
        if not level.HasField("cause"):
            return readable
        level = level.cause
