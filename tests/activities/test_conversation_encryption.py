"""With AGENT_PAYLOAD_KEYS, the conversation segments the model activity writes to S3 are
encrypted under the same keys as history (and named by a keyed digest), still read after a key
rotation, and refused naming the key id by a process without that key."""

from __future__ import annotations

import asyncio
import hashlib
import uuid

import pytest

from activities.conversation import ConversationSegment, ConversationStore
from agent import ChatMessage
from core.codec import MissingPayloadKeyError, new_payload_key
from core.s3 import payloads_bucket, s3_client


def body_of(head: str) -> tuple[bytes, str]:
    stored = s3_client().get_object(Bucket=payloads_bucket(), Key=f"conversations/{head}.json")
    return stored["Body"].read(), stored["ContentType"]


async def test_segments_are_encrypted_and_survive_a_rotation(stack, monkeypatch):
    secret = f"my account number is {uuid.uuid4().hex}"
    old = f"old:{new_payload_key()}"
    monkeypatch.setenv("AGENT_PAYLOAD_KEYS", old)
    first = [ChatMessage.from_user(secret)]
    head = await ConversationStore.from_env().extend(None, [], first)

    body, content_type = await asyncio.to_thread(body_of, head)
    assert secret.encode() not in body and b"binary/encrypted" in body and content_type == "application/octet-stream"
    plain_json = ConversationSegment(parent=None, messages=first).model_dump_json().encode()
    assert hashlib.sha256(plain_json).hexdigest() != head  # the name tells nothing to who guesses the text

    monkeypatch.setenv("AGENT_PAYLOAD_KEYS", f"new:{new_payload_key()},{old}")
    rotated = ConversationStore.from_env()  # a new process: nothing cached
    second = [ChatMessage.from_assistant("noted")]
    head2 = await rotated.extend(head, await rotated.load(head), second)
    body2, _ = await asyncio.to_thread(body_of, head2)
    assert b"new" in body2 and b"noted" not in body2
    assert await ConversationStore.from_env().load(head2) == first + second

    monkeypatch.setenv("AGENT_PAYLOAD_KEYS", f"other:{new_payload_key()}")
    with pytest.raises(MissingPayloadKeyError, match=rf"conversations/{head2}\.json: .*key id 'new'"):
        await ConversationStore.from_env().load(head2)


async def test_segments_stored_before_keys_were_set_are_still_read(stack, monkeypatch):
    monkeypatch.delenv("AGENT_PAYLOAD_KEYS", raising=False)
    messages = [ChatMessage.from_user(f"plain {uuid.uuid4().hex}")]
    head = await ConversationStore.from_env().extend(None, [], messages)
    monkeypatch.setenv("AGENT_PAYLOAD_KEYS", f"k:{new_payload_key()}")
    assert await ConversationStore.from_env().load(head) == messages
