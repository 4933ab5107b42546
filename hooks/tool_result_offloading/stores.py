"""Stores for offloaded tool results: a local directory, or an S3 bucket.

A store is a small serialisable descriptor. In a run, the hook only holds the descriptor and
the writes and reads happen in activities (the tool activity, this family's ``activities.py``)
or in the ``read_tool_result`` tool, both on the worker. Stores are scoped to one run with
``for_run(run_id)``: a run-scoped store writes under the run's own directory or key prefix and
refuses to read anything outside it.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from core.s3 import s3_client
from core.serialization import default_from_dict, default_to_dict
from core.settings import DEFAULT_TOOL_RESULTS_PREFIX, get_settings
from core.side_effects import check_bucket, check_file_path
from core.tool_records import encode_key_segment
from hooks.tool_result_offloading.protocol import ToolResultStore

#: Default key prefix in the S3 bucket (``TOOL_RESULTS_PREFIX`` overrides it).
DEFAULT_S3_PREFIX = DEFAULT_TOOL_RESULTS_PREFIX
_SSE_VALUES = (None, "AES256", "aws:kms", "aws:kms:dsse")


class ToolResultStoreError(RuntimeError):
    """The store could not write or read (missing bucket, missing object, access denied, I/O error)."""


class ToolResultNotFoundError(ToolResultStoreError, FileNotFoundError):
    """No result at the reference: a ``FileNotFoundError``, as Haystack's store raises, and a
    :class:`ToolResultStoreError`, as this project's callers catch."""


def check_relative_key(key: str) -> str:
    """Return ``key`` if it is a relative ``/``-separated key without ``.``/``..``/empty segments.

    :raises ValueError: For an absolute key, a backslash, or a ``.``/``..``/empty segment.
    """
    if not isinstance(key, str) or not key:
        raise ValueError(f"Result key must be a non-empty string, got {key!r}.")
    if key.startswith("/") or "\\" in key or PurePosixPath(key).is_absolute():
        raise ValueError(f"Result key '{key}' must be relative (no leading '/', no backslash).")
    if any(part in ("", ".", "..") for part in key.split("/")):
        raise ValueError(f"Result key '{key}' has an empty, '.' or '..' segment.")
    return key


class FileSystemToolResultStore(ToolResultStore):
    """Writes each result to ``root/key`` (``root/<run id>/key`` once bound with :meth:`for_run`).

    References are absolute file paths. A key or reference that resolves outside the store's
    root, through ``..``, an absolute path or a symlink, is refused.

    :param root: Directory results are written under; created on first write. As in Haystack,
        ``""`` is the current directory (``Path("")``).
    :param run_id: The run this store is scoped to (set by :meth:`for_run`); None for no scoping.
    """

    def __init__(self, root: str | Path, run_id: str | None = None) -> None:
        self.root = Path(root)
        self.run_id = run_id
        if run_id is not None:
            encode_key_segment(run_id)

    def for_run(self, run_id: str) -> FileSystemToolResultStore:
        """A copy confined to ``root/<run id>``; other runs' files are outside it."""
        return FileSystemToolResultStore(self.root, run_id=run_id)

    @property
    def base(self) -> Path:
        """The directory this store reads and writes in (the run's directory when bound)."""
        return self.root / encode_key_segment(self.run_id) if self.run_id is not None else self.root

    def _resolve_inside(self, path_like: str | Path, *, subject: str) -> Path:
        base = self.base.resolve()
        path = Path(path_like)
        resolved = (path if path.is_absolute() else base / path).resolve()
        if not resolved.is_relative_to(base):
            raise ValueError(f"{subject} '{path_like}' resolves outside the store root '{base}'.")
        return resolved

    def write(self, *, key: str, content: str) -> str:
        """Write ``content`` (UTF-8) to ``base/key`` atomically; returns the absolute path.

        As in Haystack, ``key`` is relative to ``base``, or absolute, and is accepted wherever it
        resolves inside ``base``: ``sub/../a.txt``, ``./a.txt``, ``a//b.txt`` and an absolute path
        inside it all are.

        :raises ValueError: If ``key`` is not a non-empty string or resolves outside ``base`` (through
            ``..``, an absolute path or a symlink), or onto ``base`` itself.
        """
        if not isinstance(key, str) or not key:
            raise ValueError(f"Result key must be a non-empty string, got {key!r}.")
        path = self._resolve_inside(key, subject="Result key")
        if path == self.base.resolve():
            raise ValueError(f"Result key '{key}' names the store root '{path}' itself, not a file in it.")
        check_file_path(path, "FileSystemToolResultStore file")  # on a worker: under AGENT_FILE_ROOTS
        path.parent.mkdir(parents=True, exist_ok=True)
        path = self._resolve_inside(path, subject="Result key")  # a symlinked parent may have been created meanwhile
        check_file_path(path, "FileSystemToolResultStore file")
        temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        temporary.write_text(content, encoding="utf-8")
        os.replace(temporary, path)
        return str(path)

    def read(self, reference: str) -> str:
        """Read a reference returned by :meth:`write`.

        :raises ValueError: If ``reference`` resolves outside the root (another run's file included).
        :raises ToolResultNotFoundError: If there is no file at ``reference`` (a ``FileNotFoundError``,
            as in Haystack, and a ``ToolResultStoreError``).
        """
        path = self._resolve_inside(reference, subject="Result reference")
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise ToolResultNotFoundError(f"No tool result at '{reference}'.") from exc

    def to_dict(self) -> dict[str, Any]:
        """Serialise root (and run id)."""
        return default_to_dict(self, root=str(self.root), run_id=self.run_id)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileSystemToolResultStore:
        """Rebuild from :meth:`to_dict`'s output.

        :raises core.side_effects.SideEffectRefused: On a worker, for a root outside ``AGENT_FILE_ROOTS``.
        """
        store = default_from_dict(cls, data)
        check_file_path(store.root, "FileSystemToolResultStore root")
        return store

    def __repr__(self) -> str:
        return f"FileSystemToolResultStore(root={str(self.root)!r}, run_id={self.run_id!r})"


class S3ToolResultStore(ToolResultStore):
    """Writes each result to ``s3://bucket/{prefix}/{run id}/{key}`` with boto3.

    boto3 is configured by its own environment (``AWS_ENDPOINT_URL_S3``, ``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``, profiles); the store never names an
    endpoint. Clients are cached per process (``core.s3.s3_client``). The bucket
    must exist.

    :param bucket: The bucket name.
    :param prefix: Key prefix; each run's results live under ``{prefix}/{run id}/``.
    :param server_side_encryption: ``None``, ``"AES256"``, ``"aws:kms"`` or ``"aws:kms:dsse"``.
    :param kms_key_id: KMS key for the ``aws:kms*`` modes (optional; the bucket default otherwise).
    :param run_id: The run this store is scoped to (set by :meth:`for_run`); reads and writes
        need one.
    :raises ValueError: For an empty bucket, an unknown encryption mode, or a KMS key without KMS.
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = DEFAULT_S3_PREFIX,
        server_side_encryption: str | None = None,
        kms_key_id: str | None = None,
        run_id: str | None = None,
    ) -> None:
        if not bucket or "/" in bucket:
            raise ValueError(f"S3ToolResultStore needs a bucket name (no '/'), got {bucket!r}.")
        if server_side_encryption not in _SSE_VALUES:
            raise ValueError(
                f"server_side_encryption must be one of {', '.join(map(str, _SSE_VALUES))}, "
                f"got {server_side_encryption!r}."
            )
        if kms_key_id and not (server_side_encryption or "").startswith("aws:kms"):
            raise ValueError("kms_key_id needs server_side_encryption='aws:kms' or 'aws:kms:dsse'.")
        prefix = prefix.strip("/")
        if prefix:
            check_relative_key(prefix)
        if run_id is not None:
            encode_key_segment(run_id)
        self.bucket = bucket
        self.prefix = prefix
        self.server_side_encryption = server_side_encryption
        self.kms_key_id = kms_key_id
        self.run_id = run_id

    def for_run(self, run_id: str) -> S3ToolResultStore:
        """A copy that writes and reads only under ``{prefix}/{run id}/``."""
        return S3ToolResultStore(self.bucket, self.prefix, self.server_side_encryption, self.kms_key_id, run_id=run_id)

    @property
    def run_prefix(self) -> str:
        """``{prefix}/{encoded run id}/``: every key of this run starts with it.

        :raises ValueError: If the store is not bound to a run.
        """
        if self.run_id is None:
            raise ValueError("S3ToolResultStore is not bound to a run: use store.for_run(run_id).")
        run = encode_key_segment(self.run_id)
        return f"{self.prefix}/{run}/" if self.prefix else f"{run}/"

    def _client(self) -> Any:
        return s3_client()

    def write(self, *, key: str, content: str) -> str:
        """Put ``content`` (UTF-8) at ``{prefix}/{run id}/{key}``; returns ``s3://bucket/...``.

        :raises ValueError: For a bad key or an unbound store.
        :raises ToolResultStoreError: If S3 refuses (the message names the bucket).
        """
        object_key = self.run_prefix + check_relative_key(key)
        check_bucket(self.bucket, "S3ToolResultStore")  # on a worker: among AGENT_S3_BUCKETS
        extra: dict[str, Any] = {}
        if self.server_side_encryption:
            extra["ServerSideEncryption"] = self.server_side_encryption
        if self.kms_key_id:
            extra["SSEKMSKeyId"] = self.kms_key_id
        with self._errors(object_key):
            self._client().put_object(
                Bucket=self.bucket,
                Key=object_key,
                Body=content.encode("utf-8"),
                ContentType="text/plain; charset=utf-8",
                **extra,
            )
        return f"s3://{self.bucket}/{object_key}"

    def object_key(self, reference: str) -> str:
        """The object key of ``reference`` after checking it belongs to this store and run.

        :raises ValueError: If it is not an ``s3://`` URI, names another bucket, or lies outside
            ``{prefix}/{run id}/`` (another run's result).
        """
        if not isinstance(reference, str) or not reference.startswith("s3://"):
            raise ValueError(f"Result reference {reference!r} is not an s3:// URI.")
        bucket, _, object_key = reference[len("s3://") :].partition("/")
        if bucket != self.bucket:
            raise ValueError(
                f"Result reference '{reference}' is in bucket '{bucket}'; this store reads only bucket '{self.bucket}'."
            )
        run_prefix = self.run_prefix
        if not object_key.startswith(run_prefix):
            raise ValueError(
                f"Result reference '{reference}' is outside this run's prefix 's3://{self.bucket}/{run_prefix}': "
                "a run can read only its own tool results."
            )
        check_relative_key(object_key[len(run_prefix) :])
        return object_key

    def read(self, reference: str) -> str:
        """Get the text at ``reference``.

        :raises ValueError: If the reference belongs to another bucket, prefix or run.
        :raises ToolResultStoreError: If S3 refuses or there is no such object.
        """
        object_key = self.object_key(reference)
        with self._errors(object_key):
            body = self._client().get_object(Bucket=self.bucket, Key=object_key)["Body"].read()
        return body.decode("utf-8")

    def _errors(self, object_key: str) -> contextlib.AbstractContextManager[None]:
        return _s3_errors(self.bucket, object_key)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the descriptor (no client, no credentials)."""
        return default_to_dict(
            self,
            bucket=self.bucket,
            prefix=self.prefix,
            server_side_encryption=self.server_side_encryption,
            kms_key_id=self.kms_key_id,
            run_id=self.run_id,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> S3ToolResultStore:
        """Rebuild from :meth:`to_dict`'s output.

        :raises core.side_effects.SideEffectRefused: On a worker, for a bucket not among ``AGENT_S3_BUCKETS``.
        """
        store = default_from_dict(cls, data)
        check_bucket(store.bucket, "S3ToolResultStore")
        return store

    def __repr__(self) -> str:
        return f"S3ToolResultStore(bucket={self.bucket!r}, prefix={self.prefix!r}, run_id={self.run_id!r})"


@contextlib.contextmanager
def _s3_errors(bucket: str, key: str) -> Iterator[None]:
    """Turn botocore errors into :class:`ToolResultStoreError` naming the bucket and key."""
    try:
        yield
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code == "NoSuchBucket":
            raise ToolResultStoreError(
                f"S3 bucket '{bucket}' does not exist (check TOOL_RESULTS_BUCKET and AWS_ENDPOINT_URL_S3, "
                "or create the bucket)."
            ) from exc
        if code in ("NoSuchKey", "404"):
            raise ToolResultNotFoundError(f"No tool result at 's3://{bucket}/{key}'.") from exc
        raise ToolResultStoreError(f"S3 error {code or exc} for 's3://{bucket}/{key}': {exc}") from exc
    except BotoCoreError as exc:
        raise ToolResultStoreError(f"S3 request for 's3://{bucket}/{key}' failed: {exc}") from exc


def store_from_environment() -> FileSystemToolResultStore | S3ToolResultStore:
    """The store the environment names (worker or client side; never call it from workflow code).

    ``TOOL_RESULTS_BUCKET`` set: ``S3ToolResultStore(bucket, prefix=TOOL_RESULTS_PREFIX or
    "tool-results", server_side_encryption=TOOL_RESULTS_SSE or None)``. Otherwise a
    ``FileSystemToolResultStore`` rooted at ``TOOL_RESULTS_DIR`` (default ``.agent-dev/tool-results``).
    """
    settings = get_settings()
    if settings.tool_results_bucket:
        return S3ToolResultStore(
            settings.tool_results_bucket,
            prefix=settings.tool_results_prefix,
            server_side_encryption=settings.tool_results_sse,
        )
    return FileSystemToolResultStore(settings.tool_results_dir)
