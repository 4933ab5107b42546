"""Audit stores: where a run's audit records go, one object per record.

A store is a small serialisable descriptor. ``AuditHook`` only holds it; the
``write_audit_records`` activity rebuilds it on the worker (``core.serialization.object_from_dict``)
and calls :meth:`write`. Every run writes under its own directory or key prefix: the run id,
percent-encoded into one path segment, so no run id can reach another run's records.

Writes are idempotent in the way activity retries need: writing a key again with the same
content leaves the same object behind.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from core.s3 import s3_client
from core.serialization import default_from_dict, default_to_dict
from core.side_effects import check_bucket, check_file_path
from core.tool_records import encode_key_segment

#: Default key prefix in the S3 bucket.
DEFAULT_S3_PREFIX = "audit"


class AuditStoreError(RuntimeError):
    """The store could not write (missing bucket, access denied, I/O error). Retrying may help."""


def check_record_key(key: str) -> str:
    """Return ``key`` if it is a relative ``/``-separated key without ``.``/``..``/empty segments.

    :param key: A key inside a run's records, e.g. ``step-000003/call_1.json``.
    :raises ValueError: For an empty or absolute key, a backslash, or a ``.``/``..``/empty segment.
    """
    if not isinstance(key, str) or not key:
        raise ValueError(f"Audit record key must be a non-empty string, got {key!r}.")
    if key.startswith("/") or "\\" in key:
        raise ValueError(f"Audit record key '{key}' must be relative (no leading '/', no backslash).")
    if any(part in ("", ".", "..") for part in key.split("/")):
        raise ValueError(f"Audit record key '{key}' has an empty, '.' or '..' segment.")
    return key


class FileSystemAuditStore:
    """Writes each record to ``root/<encoded run id>/<key>``.

    References are absolute file paths. Each write goes to a temporary file first and is then
    renamed into place, so a reader never sees half a record and a retried write is harmless.

    :param root: Directory records are written under; created on first write.
    :raises ValueError: If ``root`` is empty or not a path.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        if not isinstance(root, str | os.PathLike) or not os.fspath(root):
            raise ValueError(f"FileSystemAuditStore needs a root directory, got {root!r}.")
        self.root = Path(root)

    def path_for(self, run_id: str, key: str) -> Path:
        """The file a record of ``run_id`` under ``key`` is written to.

        :param run_id: The run (workflow id); encoded into one directory name.
        :param key: The record's key inside the run.
        :raises ValueError: For a bad key, a run id of ``""``/``.``/``..``, or a path that resolves
            outside the run's directory (a symlink).
        """
        run_dir = (self.root / encode_key_segment(run_id)).resolve()
        path = (run_dir / check_record_key(key)).resolve()
        if not path.is_relative_to(run_dir):
            raise ValueError(f"Audit record key '{key}' resolves outside the run directory '{run_dir}'.")
        return path

    def write(self, run_id: str, key: str, content: str) -> str:
        """Write ``content`` (UTF-8) as the record ``key`` of ``run_id``; returns the absolute path.

        :param run_id: The run the record belongs to.
        :param key: The record's key inside the run.
        :param content: The record (JSON text).
        :raises ValueError: For a bad key or run id (see :meth:`path_for`).
        :raises AuditStoreError: If the file cannot be written.
        """
        path = self.path_for(run_id, key)
        check_file_path(path, "FileSystemAuditStore file")  # on a worker: under AGENT_FILE_ROOTS
        try:
            # A retry of a write that already landed: nothing to do.
            if path.is_file() and path.read_text(encoding="utf-8") == content:
                return str(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
            temporary.write_text(content, encoding="utf-8")
            os.replace(temporary, path)
        except OSError as exc:
            raise AuditStoreError(f"Cannot write audit record '{path}': {exc}") from exc
        return str(path)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the root directory."""
        return default_to_dict(self, root=str(self.root))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileSystemAuditStore:
        """Rebuild from :meth:`to_dict`'s output.

        :raises core.side_effects.SideEffectRefused: On a worker, for a root outside ``AGENT_FILE_ROOTS``.
        """
        store = default_from_dict(cls, data)
        check_file_path(store.root, "FileSystemAuditStore root")
        return store

    def __repr__(self) -> str:
        return f"FileSystemAuditStore(root={str(self.root)!r})"


class S3AuditStore:
    """Writes each record to ``s3://bucket/{prefix}/{encoded run id}/{key}`` with boto3.

    boto3 is configured by its own environment (``AWS_ENDPOINT_URL_S3``, credentials, region,
    profiles); the store never names an endpoint or holds credentials. The bucket must exist.
    A ``PUT`` of the same key and content is idempotent, so retried writes are harmless.

    :param bucket: The bucket name.
    :param prefix: Key prefix; each run's records live under ``{prefix}/{encoded run id}/``.
        Leading and trailing ``/`` are dropped; ``""`` puts runs at the top of the bucket.
    :raises ValueError: For an empty bucket, a bucket with ``/``, or a prefix with an empty,
        ``.`` or ``..`` segment.
    """

    def __init__(self, bucket: str, prefix: str = DEFAULT_S3_PREFIX) -> None:
        if not isinstance(bucket, str) or not bucket or "/" in bucket:
            raise ValueError(f"S3AuditStore needs a bucket name (no '/'), got {bucket!r}.")
        if not isinstance(prefix, str):
            raise ValueError(f"S3AuditStore prefix must be a string, got {prefix!r}.")
        prefix = prefix.strip("/")
        if prefix:
            check_record_key(prefix)
        self.bucket = bucket
        self.prefix = prefix

    def object_key(self, run_id: str, key: str) -> str:
        """``{prefix}/{encoded run id}/{key}``.

        :raises ValueError: For a bad key, or a run id of ``""``/``.``/``..``.
        """
        run = encode_key_segment(run_id)
        run_prefix = f"{self.prefix}/{run}/" if self.prefix else f"{run}/"
        return run_prefix + check_record_key(key)

    def write(self, run_id: str, key: str, content: str) -> str:
        """Put ``content`` (UTF-8) as the record ``key`` of ``run_id``; returns ``s3://bucket/...``.

        :param run_id: The run the record belongs to.
        :param key: The record's key inside the run.
        :param content: The record (JSON text).
        :raises ValueError: For a bad key or run id.
        :raises AuditStoreError: If S3 refuses or cannot be reached (the message names the object).
        """
        object_key = self.object_key(run_id, key)
        check_bucket(self.bucket, "S3AuditStore")  # on a worker: among AGENT_S3_BUCKETS
        content_type = "application/json" if key.endswith(".json") else "text/plain; charset=utf-8"
        try:
            s3_client().put_object(
                Bucket=self.bucket, Key=object_key, Body=content.encode("utf-8"), ContentType=content_type
            )
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "NoSuchBucket":
                raise AuditStoreError(
                    f"S3 bucket '{self.bucket}' does not exist (create it, or check AWS_ENDPOINT_URL_S3)."
                ) from exc
            raise AuditStoreError(f"S3 error {code or exc} for 's3://{self.bucket}/{object_key}': {exc}") from exc
        except BotoCoreError as exc:
            raise AuditStoreError(f"S3 request for 's3://{self.bucket}/{object_key}' failed: {exc}") from exc
        return f"s3://{self.bucket}/{object_key}"

    def to_dict(self) -> dict[str, Any]:
        """Serialise bucket and prefix (no client, no credentials)."""
        return default_to_dict(self, bucket=self.bucket, prefix=self.prefix)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> S3AuditStore:
        """Rebuild from :meth:`to_dict`'s output.

        :raises core.side_effects.SideEffectRefused: On a worker, for a bucket not among ``AGENT_S3_BUCKETS``.
        """
        store = default_from_dict(cls, data)
        check_bucket(store.bucket, "S3AuditStore")
        return store

    def __repr__(self) -> str:
        return f"S3AuditStore(bucket={self.bucket!r}, prefix={self.prefix!r})"
