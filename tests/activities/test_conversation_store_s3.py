"""The conversation segments go to S3 through obstore (core.s3.object_store), built from what
boto3 resolves: what one writes the other reads, a failed write caches nothing, and a worker
without credentials is told so."""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid

import pytest

from activities.conversation import ConversationSegment, ConversationStore, ConversationStoreError
from agent import ChatMessage
from core.s3 import S3ConfigurationError, bucket_region, object_store, payloads_bucket, s3_client


async def test_a_segment_obstore_writes_is_the_object_boto3_reads(stack):
    store = ConversationStore.from_env()
    assert store is not None, "the dev stack configures a payloads bucket"
    messages = [ChatMessage.from_user(f"u-{uuid.uuid4().hex}"), ChatMessage.from_assistant("a")]
    head = await store.put(None, messages)

    stored = await asyncio.to_thread(s3_client().get_object, Bucket=payloads_bucket(), Key=f"conversations/{head}.json")
    body = stored["Body"].read()
    assert stored["ContentType"] == "application/json"
    assert hashlib.sha256(body).hexdigest() == head  # content-addressed: the key is the body's digest
    assert ConversationSegment.model_validate(json.loads(body)) == ConversationSegment(parent=None, messages=messages)


async def test_a_missing_segment_is_a_lookup_error_naming_its_key(stack):
    store = ConversationStore.from_env()
    head = "f" * 64
    with pytest.raises(LookupError, match=rf"s3://{payloads_bucket()}/conversations/{head}\.json is missing"):
        await store.load(head)


async def test_a_failed_write_caches_nothing_and_the_retry_stores_it(stack):
    """While the bucket is missing (the store is down) the write fails, and nothing claims the
    segment is stored; once the bucket exists the same write succeeds and reads back."""
    bucket = f"conv-outage-{uuid.uuid4().hex[:8]}"
    store = ConversationStore(bucket)
    messages = [ChatMessage.from_user("kept")]
    with pytest.raises(
        ConversationStoreError, match=rf"Could not write conversation segment s3://{bucket}/conversations/"
    ):
        await store.extend(None, [], messages)
    assert not store._cache and not store._flat

    await asyncio.to_thread(s3_client().create_bucket, Bucket=bucket)
    head = await store.extend(None, [], messages)
    assert await ConversationStore(bucket).load(head) == messages  # a fresh store: read from S3


def test_no_credentials_is_a_clear_error_at_first_use(monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")  # a fresh cache entry; never called
    with pytest.raises(S3ConfigurationError, match="No AWS credentials for bucket 'b-creds'"):
        object_store("b-creds")


async def test_the_bucket_region_comes_from_s3_for_a_worker_that_names_none(stack):
    """Without a configured region, boto3 follows S3's redirects and obstore cannot: the store asks
    S3 for the bucket's region (moto answers like S3: ``x-amz-bucket-region``)."""
    bucket = f"eu-{uuid.uuid4().hex[:8]}"
    await asyncio.to_thread(
        s3_client().create_bucket, Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    assert await asyncio.to_thread(bucket_region, bucket) == "eu-west-1"
    assert await asyncio.to_thread(bucket_region, payloads_bucket()) == "us-east-1"
