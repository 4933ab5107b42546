"""ToolResultStore implementations against a real filesystem and moto's S3 server (boto3)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from activities.result_store import StoreResultInput, store_tool_result
from agent.dev.stack import DUMMY_AWS_CREDENTIALS, MotoS3Server
from core.s3 import s3_client
from core.serialization import object_from_dict
from hooks.tool_result_offloading import (
    FileSystemToolResultStore,
    S3ToolResultStore,
    ToolResultStoreError,
    store_from_environment,
)


@pytest.fixture(scope="module")
def moto_s3() -> Iterator[MotoS3Server]:
    """moto's S3 server on a free loopback port, stopped by PID at the end of the module."""
    server = MotoS3Server().start()
    yield server
    server.stop()


@pytest.fixture
def s3_env(moto_s3: MotoS3Server, monkeypatch: pytest.MonkeyPatch) -> MotoS3Server:
    """boto3's own environment pointed at the moto server (nothing is passed to boto3 directly)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", moto_s3.endpoint_url)
    for key, value in DUMMY_AWS_CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    return moto_s3


@pytest.fixture
def bucket(s3_env: MotoS3Server) -> str:
    name = f"results-{uuid.uuid4().hex[:10]}"
    s3_env.create_bucket(name)
    return name


# --- file system -------------------------------------------------------------------------


def test_filesystem_round_trip_and_idempotent_rewrite(tmp_path: Path) -> None:
    store = FileSystemToolResultStore(tmp_path).for_run("run-1")
    reference = store.write(key="step-0/search/call_1.txt", content="héllo\nworld")
    assert Path(reference).is_file() and Path(reference).is_relative_to(tmp_path / "run-1")
    assert store.read(reference) == "héllo\nworld"
    assert store.write(key="step-0/search/call_1.txt", content="héllo\nworld") == reference
    assert store.read(reference) == "héllo\nworld"


@pytest.mark.parametrize("key", ["../escape.txt", "a/../../escape.txt", "/etc/passwd", "", ".", "sub/.."])
def test_filesystem_rejects_keys_outside_root(tmp_path: Path, key: str) -> None:
    store = FileSystemToolResultStore(tmp_path / "root")
    with pytest.raises(ValueError):
        store.write(key=key, content="x")
    assert not (tmp_path / "escape.txt").exists()


def test_filesystem_rejects_references_outside_root(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    store = FileSystemToolResultStore(tmp_path / "root")
    for reference in (str(tmp_path / "secret.txt"), "../secret.txt", str(tmp_path / "root" / ".." / "secret.txt")):
        with pytest.raises(ValueError, match="outside the store root"):
            store.read(reference)


def test_filesystem_rejects_symlinks_leaving_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside, root / "link")
    os.symlink(outside / "secret.txt", root / "file.txt")
    store = FileSystemToolResultStore(root)
    with pytest.raises(ValueError, match="outside the store root"):
        store.write(key="link/new.txt", content="x")
    with pytest.raises(ValueError, match="outside the store root"):
        store.write(key="file.txt", content="overwritten")
    with pytest.raises(ValueError, match="outside the store root"):
        store.read(str(root / "link" / "secret.txt"))
    assert (outside / "secret.txt").read_text() == "secret"
    assert not (outside / "new.txt").exists()


def test_filesystem_run_scoping_refuses_other_runs(tmp_path: Path) -> None:
    mine, other = FileSystemToolResultStore(tmp_path).for_run("a"), FileSystemToolResultStore(tmp_path).for_run("a-b")
    reference = other.write(key="r.txt", content="other run's")
    with pytest.raises(ValueError, match="outside the store root"):
        mine.read(reference)
    # A run id with a slash stays one directory: run "a" cannot reach run "a/b".
    nested = FileSystemToolResultStore(tmp_path).for_run("a/b")
    with pytest.raises(ValueError):
        mine.read(nested.write(key="r.txt", content="x"))


def test_filesystem_missing_result_is_a_clear_error(tmp_path: Path) -> None:
    store = FileSystemToolResultStore(tmp_path)
    with pytest.raises(ToolResultStoreError, match="No tool result"):
        store.read(str(tmp_path / "nothing.txt"))


def test_store_descriptors_round_trip() -> None:
    for store in (
        FileSystemToolResultStore("/tmp/x", run_id="r"),
        S3ToolResultStore("b", prefix="p/q", server_side_encryption="aws:kms", kms_key_id="k", run_id="r"),
    ):
        rebuilt = object_from_dict(store.to_dict())
        assert type(rebuilt) is type(store) and rebuilt.to_dict() == store.to_dict()


def test_s3_store_rejects_bad_configuration() -> None:
    with pytest.raises(ValueError, match="bucket"):
        S3ToolResultStore("")
    with pytest.raises(ValueError, match="server_side_encryption"):
        S3ToolResultStore("b", server_side_encryption="rot13")
    with pytest.raises(ValueError, match="kms_key_id"):
        S3ToolResultStore("b", kms_key_id="k")
    with pytest.raises(ValueError, match="not bound to a run"):
        S3ToolResultStore("b").write(key="k.txt", content="x")


# --- S3 ---------------------------------------------------------------------------------


def test_s3_round_trip_under_run_prefix(bucket: str, s3_env: MotoS3Server) -> None:
    store = S3ToolResultStore(bucket, server_side_encryption="AES256").for_run("run/1")
    content = "line\n" * 50_000
    reference = store.write(key="step-2/fetch/call%2F9.txt", content=content)
    assert reference == f"s3://{bucket}/tool-results/run%2F1/step-2/fetch/call%2F9.txt"
    assert store.read(reference) == content
    head = s3_env.client().head_object(Bucket=bucket, Key="tool-results/run%2F1/step-2/fetch/call%2F9.txt")
    assert head["ServerSideEncryption"] == "AES256"
    assert store.write(key="step-2/fetch/call%2F9.txt", content=content) == reference  # idempotent


def test_s3_refuses_other_runs_prefixes_and_buckets(bucket: str) -> None:
    base = S3ToolResultStore(bucket)
    other_reference = base.for_run("run-a2").write(key="r.txt", content="not yours")
    mine = base.for_run("run-a")
    with pytest.raises(ValueError, match="a run can read only its own tool results"):
        mine.read(other_reference)
    with pytest.raises(ValueError, match="this store reads only bucket"):
        mine.read("s3://another-bucket/tool-results/run-a/r.txt")
    with pytest.raises(ValueError, match="outside this run's prefix"):
        mine.read(f"s3://{bucket}/elsewhere/run-a/r.txt")
    with pytest.raises(ValueError):
        mine.read(f"s3://{bucket}/tool-results/run-a/../run-a2/r.txt")
    with pytest.raises(ValueError, match="not an s3:// URI"):
        mine.read("/etc/passwd")


def test_s3_missing_bucket_names_the_bucket(s3_env: MotoS3Server) -> None:
    store = S3ToolResultStore("no-such-bucket-xyz").for_run("r")
    with pytest.raises(ToolResultStoreError, match="S3 bucket 'no-such-bucket-xyz' does not exist"):
        store.write(key="k.txt", content="x")


def test_s3_missing_object_is_a_clear_error(bucket: str) -> None:
    store = S3ToolResultStore(bucket).for_run("r")
    with pytest.raises(ToolResultStoreError, match="No tool result at"):
        store.read(f"s3://{bucket}/tool-results/r/missing.txt")


def test_s3_client_is_cached_per_environment(s3_env: MotoS3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    first = s3_client()
    assert s3_client() is first
    assert first.meta.endpoint_url == s3_env.endpoint_url
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
    assert s3_client() is not first and s3_client().meta.endpoint_url == "http://127.0.0.1:9"


def test_store_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TOOL_RESULTS_BUCKET", raising=False)
    monkeypatch.setenv("TOOL_RESULTS_DIR", str(tmp_path))
    store = store_from_environment()
    assert isinstance(store, FileSystemToolResultStore) and store.root == tmp_path
    monkeypatch.setenv("TOOL_RESULTS_BUCKET", "bkt")
    store = store_from_environment()
    assert isinstance(store, S3ToolResultStore) and store.bucket == "bkt" and store.prefix == "tool-results"


# --- activities (called directly; they are plain async functions) -------------------------


async def test_store_activity_writes_through_the_descriptor(bucket: str) -> None:
    store = S3ToolResultStore(bucket).for_run("run-act")
    reference = await store_tool_result(StoreResultInput(store=store.to_dict(), key="s/t/c.txt", content="payload"))
    assert store.read(reference) == "payload"
    other = S3ToolResultStore(bucket).for_run("run-other").write(key="x.txt", content="x")
    with pytest.raises(ValueError, match="own tool results"):
        store.read(other)


async def test_store_activity_refuses_a_bad_key_without_retry(bucket: str) -> None:
    descriptor = S3ToolResultStore(bucket).for_run("run-act").to_dict()
    with pytest.raises(ApplicationError) as refused:
        await store_tool_result(StoreResultInput(store=descriptor, key="../x.txt", content="x"))
    assert refused.value.non_retryable


# --- the read_tool_result tool ----------------------------------------------------------


@pytest.fixture
def as_tool_call_of() -> Iterator[Any]:
    """Run code as if inside a tool call of the given run (sets the tool context the tool reads)."""
    from core.tools import ToolContext, _tool_context

    tokens = []

    def enter(run_id: str) -> None:
        tokens.append(_tool_context.set(ToolContext(run_id=run_id, tool_call_id="c", idempotency_key=f"{run_id}/c")))

    yield enter
    for token in reversed(tokens):
        _tool_context.reset(token)


def test_read_tool_result_pages_a_2mb_result_from_s3(
    bucket: str, monkeypatch: pytest.MonkeyPatch, as_tool_call_of: Any
) -> None:
    from hooks.tool_result_offloading import read_tool_result
    from hooks.tool_result_offloading.reader import READ_LIMIT_CHARS

    monkeypatch.setenv("TOOL_RESULTS_BUCKET", bucket)
    content = "".join(f"line {i:06d}\n" for i in range(170_000))  # ~2 MB
    reference = S3ToolResultStore(bucket).for_run("run-r").write(key="step-0/big/c.txt", content=content)
    as_tool_call_of("run-r")
    first = read_tool_result(reference)
    assert first.startswith(content[:READ_LIMIT_CHARS]) and f"start={READ_LIMIT_CHARS}" in first
    assert read_tool_result(reference, start=1_000_000, end=1_000_012) == content[1_000_000:1_000_012]
    assert read_tool_result(reference, start_line=100_001, end_line=100_002) == "line 100000\nline 100001\n"
    pages, start = [], 0
    while start < len(content):
        pages.append(read_tool_result(reference, start=start, end=start + READ_LIMIT_CHARS))
        start += READ_LIMIT_CHARS
    assert "".join(pages) == content
    with pytest.raises(ValueError, match="not both"):
        read_tool_result(reference, start=0, start_line=1)
    as_tool_call_of("run-other")
    with pytest.raises(ValueError, match="own tool results"):
        read_tool_result(reference)


def test_read_tool_result_filesystem_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, as_tool_call_of: Any
) -> None:
    from hooks.tool_result_offloading import read_tool_result

    monkeypatch.delenv("TOOL_RESULTS_BUCKET", raising=False)
    monkeypatch.setenv("TOOL_RESULTS_DIR", str(tmp_path))
    reference = FileSystemToolResultStore(tmp_path).for_run("run-f").write(key="k.txt", content="a\nb\nc\n")
    as_tool_call_of("run-f")
    assert read_tool_result(reference, start_line=2) == "b\nc\n"
    as_tool_call_of("run-g")
    with pytest.raises(ValueError, match="outside the store root"):
        read_tool_result(reference)


def test_read_tool_result_spec_is_model_friendly() -> None:
    from hooks.tool_result_offloading import read_tool_result

    assert read_tool_result.name == "read_tool_result"
    properties = set(read_tool_result.spec.parameters["properties"])
    assert properties == {"reference", "start", "end", "start_line", "end_line"}
    assert read_tool_result.spec.parameters["required"] == ["reference"]
    assert "TOOL_RESULTS_BUCKET" in (read_tool_result.function.__doc__ or "")
