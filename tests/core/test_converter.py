"""agent_data_converter(): payloads over the threshold go to S3 through Temporal's ExternalStorage."""

from __future__ import annotations

import uuid

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.tool_invocation import ToolInvocationOutput
from agent.dev.stack import MotoS3Server
from core.codec import EncryptionCodec
from core.converter import DEFAULT_PAYLOAD_THRESHOLD_BYTES, agent_data_converter
from core.messages import ChatMessage, ToolCall
from tests.hooks.tool_result_offloading.test_stores import moto_s3, s3_env  # noqa: F401 - fixtures


@pytest.fixture
def payload_bucket(s3_env: MotoS3Server, monkeypatch: pytest.MonkeyPatch) -> str:  # noqa: F811
    name = f"payloads-{uuid.uuid4().hex[:10]}"
    s3_env.create_bucket(name)
    monkeypatch.setenv("TEMPORAL_PAYLOADS_BUCKET", name)
    monkeypatch.delenv("TEMPORAL_PAYLOAD_THRESHOLD_BYTES", raising=False)
    return name


def objects(server: MotoS3Server, bucket: str) -> dict[str, int]:
    listing = server.client().list_objects_v2(Bucket=bucket)
    return {o["Key"]: o["Size"] for o in listing.get("Contents", [])}


def test_without_a_bucket_or_keys_it_is_the_pydantic_converter_with_the_keyless_codec(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TEMPORAL_PAYLOADS_BUCKET", raising=False)
    monkeypatch.delenv("TOOL_RESULTS_BUCKET", raising=False)
    monkeypatch.delenv("AGENT_PAYLOAD_KEYS", raising=False)
    converter = agent_data_converter()
    assert converter.external_storage is None
    assert converter.payload_converter_class is pydantic_data_converter.payload_converter_class
    assert converter.failure_converter_class is pydantic_data_converter.failure_converter_class
    # encrypts nothing; only refuses encrypted payloads naming their key (tests/core/test_codec.py)
    assert isinstance(converter.payload_codec, EncryptionCodec) and converter.payload_codec.encrypting_key_id is None


def test_tool_results_bucket_is_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEMPORAL_PAYLOADS_BUCKET", raising=False)
    monkeypatch.setenv("TOOL_RESULTS_BUCKET", "shared")
    monkeypatch.setenv("TEMPORAL_PAYLOAD_THRESHOLD_BYTES", "1000")
    converter = agent_data_converter()
    assert converter.external_storage is not None
    assert converter.external_storage.payload_size_threshold == 1000
    assert converter.payload_converter_class is pydantic_data_converter.payload_converter_class


@pytest.mark.parametrize("raw", ["lots", "-1", "1.5"])
def test_bad_threshold_is_a_value_error(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("TEMPORAL_PAYLOADS_BUCKET", "b")
    monkeypatch.setenv("TEMPORAL_PAYLOAD_THRESHOLD_BYTES", raw)
    with pytest.raises(ValueError, match="TEMPORAL_PAYLOAD_THRESHOLD_BYTES"):
        agent_data_converter()


async def test_big_payload_round_trips_through_s3_as_a_small_reference(
    payload_bucket: str,
    s3_env: MotoS3Server,  # noqa: F811
) -> None:
    converter = agent_data_converter()
    big = ToolInvocationOutput(result="x" * (5 * 1024 * 1024), meta={"k": "v"})
    [payload] = await converter.encode([big])
    assert payload.ByteSize() < 2_000, "history keeps only a reference"
    assert len(payload.external_payloads) == 1 and payload.external_payloads[0].size_bytes > 5 * 1024 * 1024
    stored = objects(s3_env, payload_bucket)
    assert len(stored) == 1 and next(iter(stored.values())) > 5 * 1024 * 1024
    [decoded] = await converter.decode([payload], [ToolInvocationOutput])
    assert decoded == big
    # Content-addressed: the same bytes again write no new object.
    await converter.encode([big])
    assert len(objects(s3_env, payload_bucket)) == 1


async def test_small_payload_stays_inline(payload_bucket: str, s3_env: MotoS3Server) -> None:  # noqa: F811
    converter = agent_data_converter()
    small = ChatMessage.from_tool("y" * (DEFAULT_PAYLOAD_THRESHOLD_BYTES // 2), origin=ToolCall(tool_name="t"))
    [payload] = await converter.encode([small])
    assert len(payload.external_payloads) == 0 and payload.ByteSize() > DEFAULT_PAYLOAD_THRESHOLD_BYTES // 2
    assert objects(s3_env, payload_bucket) == {}
    assert (await converter.decode([payload], [ChatMessage]))[0] == small


async def test_threshold_from_environment(
    payload_bucket: str,
    s3_env: MotoS3Server,
    monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    monkeypatch.setenv("TEMPORAL_PAYLOAD_THRESHOLD_BYTES", "4096")
    [payload] = await agent_data_converter().encode([ToolInvocationOutput(result="z" * 5000)])
    assert len(payload.external_payloads) == 1 and len(objects(s3_env, payload_bucket)) == 1


async def test_missing_payload_bucket_names_it(
    s3_env: MotoS3Server,
    monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    monkeypatch.setenv("TEMPORAL_PAYLOADS_BUCKET", "no-such-payload-bucket")
    with pytest.raises(RuntimeError, match="bucket=no-such-payload-bucket"):
        await agent_data_converter().encode([ToolInvocationOutput(result="x" * 300_000)])
