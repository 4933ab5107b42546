"""Encryption at rest (core/codec.py): AGENT_PAYLOAD_KEYS, the AES-256-GCM codec in the project's
data converter, failure messages in encoded attributes, and external-storage objects in S3."""

from __future__ import annotations

import base64
import uuid

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.api.failure.v1 import Failure
from temporalio.converter import DefaultFailureConverterWithEncodedAttributes
from temporalio.exceptions import ApplicationError

from activities.tool_invocation import ToolInvocationOutput
from agent.dev.stack import MotoS3Server
from core.codec import (
    EncryptionCodec,
    MissingPayloadKeyError,
    PayloadDecryptionError,
    new_payload_key,
    parse_payload_keys,
)
from core.converter import agent_data_converter, readable_failure
from core.settings import SettingsError, get_settings
from tests.core.test_converter import objects, payload_bucket  # noqa: F401 - fixture
from tests.hooks.tool_result_offloading.test_stores import moto_s3, s3_env  # noqa: F401 - fixtures

SECRET = "the patient's diagnosis"


def keys_env(*key_ids: str) -> tuple[str, dict[str, str]]:
    """An ``AGENT_PAYLOAD_KEYS`` value with fresh keys under ``key_ids``, and the keys by id."""
    keys = {key_id: new_payload_key() for key_id in key_ids}
    return ",".join(f"{key_id}:{key}" for key_id, key in keys.items()), keys


def codec(*key_ids: str) -> EncryptionCodec:
    return EncryptionCodec(parse_payload_keys(keys_env(*key_ids)[0]))


def plain(text: str) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=f'"{text}"'.encode())


async def test_payloads_are_aes_gcm_in_the_samples_format():
    value, keys = keys_env("k1")
    [encrypted] = await EncryptionCodec(parse_payload_keys(value)).encode([plain(SECRET)])
    assert dict(encrypted.metadata) == {"encoding": b"binary/encrypted", "encryption-key-id": b"k1"}
    assert SECRET.encode() not in encrypted.data
    # nonce (12 bytes) + AES-GCM ciphertext of the serialised Payload, as Temporal's samples write it
    key = parse_payload_keys(value)["k1"]
    inner = AESGCM(key).decrypt(encrypted.data[:12], encrypted.data[12:], None)
    assert Payload.FromString(inner) == plain(SECRET)


async def test_each_encryption_uses_a_fresh_nonce():
    one = codec("k1")
    first, second = await one.encode([plain(SECRET), plain(SECRET)])
    assert first.data[:12] != second.data[:12] and first.data != second.data


async def test_the_first_key_encrypts_and_every_key_decrypts():
    value, keys = keys_env("old")
    old = EncryptionCodec(parse_payload_keys(value))
    rotated = EncryptionCodec(parse_payload_keys(f"new:{new_payload_key()},{value}"))
    [under_old] = await old.encode([plain("before")])
    [under_new] = await rotated.encode([plain("after")])
    assert under_new.metadata["encryption-key-id"] == b"new"
    assert await rotated.decode([under_old, under_new]) == [plain("before"), plain("after")]
    with pytest.raises(MissingPayloadKeyError, match=r"key id 'new'.*it has 'old'.*AGENT_PAYLOAD_KEYS"):
        await old.decode([under_new])


async def test_a_process_without_keys_names_the_key_id_it_lacks():
    [encrypted] = await codec("prod-2026").encode([plain(SECRET)])
    keyless = EncryptionCodec({})
    assert await keyless.encode([plain(SECRET)]) == [plain(SECRET)]  # encrypts nothing
    with pytest.raises(MissingPayloadKeyError, match=r"key id 'prod-2026'.*AGENT_PAYLOAD_KEYS is not set"):
        await keyless.decode([encrypted])


async def test_other_key_material_under_the_same_id_or_altered_bytes_do_not_decrypt():
    [encrypted] = await codec("k").encode([plain(SECRET)])
    with pytest.raises(PayloadDecryptionError, match="key id 'k' does not decrypt"):
        await codec("k").decode([encrypted])
    mine = EncryptionCodec(parse_payload_keys(keys_env("k")[0]))
    [encrypted] = await mine.encode([plain(SECRET)])
    altered = Payload()
    altered.CopyFrom(encrypted)
    altered.data = encrypted.data[:-1] + bytes([encrypted.data[-1] ^ 1])
    with pytest.raises(PayloadDecryptionError):
        await mine.decode([altered])


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("k1", r"entry 1 has no ':'"),
        ("k 1:AAAA", r"entry 1: the key id must be"),
        ("k1:not base64!", r"entry 1 \('k1'\): the key is not base64"),
        ("k1:" + "A" * 43 + ",k1:" + "A" * 43, r"entry 2 \('k1'\): the key id is given twice"),
        ("k1:" + "AAAA" * 4, r"entry 1 \('k1'\): the key has 12 bytes, AES-256 needs 32"),
    ],
)
def test_a_bad_value_is_a_settings_error_naming_the_variable_and_never_the_key(monkeypatch, value, reason):
    monkeypatch.setenv("AGENT_PAYLOAD_KEYS", value)
    with pytest.raises(SettingsError, match=rf"AGENT_PAYLOAD_KEYS=\*+: Value error, {reason}") as raised:
        get_settings()
    secret_part = value.partition(":")[2]
    assert not secret_part or secret_part not in str(raised.value)


def test_url_safe_and_unpadded_base64_keys_are_accepted():
    key = bytes(range(200, 232))
    url_safe = base64.urlsafe_b64encode(key).decode().rstrip("=")
    assert "-" in url_safe or "_" in url_safe
    assert parse_payload_keys(f"a:{url_safe}") == {"a": key}


async def test_the_converter_encrypts_values_and_failure_messages(monkeypatch):
    value, _ = keys_env("k1")
    monkeypatch.setenv("AGENT_PAYLOAD_KEYS", value)
    converter = agent_data_converter()
    assert converter.failure_converter_class is DefaultFailureConverterWithEncodedAttributes
    [payload] = await converter.encode([ToolInvocationOutput(result=SECRET)])
    assert payload.metadata["encoding"] == b"binary/encrypted" and SECRET.encode() not in payload.SerializeToString()
    assert await converter.decode([payload], [ToolInvocationOutput]) == [ToolInvocationOutput(result=SECRET)]

    failure = Failure()
    await converter.encode_failure(ApplicationError(f"tool said {SECRET}", {"detail": SECRET}), failure)
    assert SECRET.encode() not in failure.SerializeToString()
    assert failure.message == "Encoded failure"
    assert (await readable_failure(failure, converter)).message == f"tool said {SECRET}"
    decoded = await converter.decode_failure(failure)
    assert str(decoded) == f"tool said {SECRET}"


async def test_a_failure_under_a_key_this_process_lacks_says_which(monkeypatch):
    monkeypatch.setenv("AGENT_PAYLOAD_KEYS", keys_env("gone")[0])
    failure = Failure()
    await agent_data_converter().encode_failure(RuntimeError(SECRET), failure)
    monkeypatch.setenv("AGENT_PAYLOAD_KEYS", keys_env("other")[0])
    readable = await readable_failure(failure, agent_data_converter())
    assert readable.message.startswith("Encoded failure (A payload is encrypted under key id 'gone'")


async def test_external_storage_objects_are_ciphertext(
    payload_bucket: str,  # noqa: F811
    s3_env: MotoS3Server,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The codec runs before external storage (temporalio's DataConverter.encode), so what S3
    holds is the encrypted payload; the reference in history is plain."""
    monkeypatch.setenv("AGENT_PAYLOAD_KEYS", keys_env("k1")[0])
    monkeypatch.setenv("TEMPORAL_PAYLOAD_THRESHOLD_BYTES", "1024")
    converter = agent_data_converter()
    big = ToolInvocationOutput(result=f"{SECRET} " * 200 + uuid.uuid4().hex)
    [reference] = await converter.encode([big])
    assert len(reference.external_payloads) == 1
    [key] = objects(s3_env, payload_bucket)
    body = s3_env.client().get_object(Bucket=payload_bucket, Key=key)["Body"].read()
    assert SECRET.encode() not in body and b"binary/encrypted" in body
    assert await converter.decode([reference], [ToolInvocationOutput]) == [big]
