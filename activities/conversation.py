"""Conversation by reference: the model activity's input names stored conversation instead of
carrying it, so workflow history grows by each step's new messages only (not quadratically).

The conversation is a chain of content-addressed segments in S3 (``{parent, messages}``,
keyed by the SHA-256 of their JSON). The model activity loads the chain named by the
workflow's ``conversation_head`` (from memory when this worker wrote it), appends the new
messages, and writes them as one segment *while the model call is in flight*, so S3's latency
stays off the step's path; the new head comes back in its output once both are done. The reply
is not in that segment: the next step sends it with its own new messages (a few hundred bytes of
history a step). Each segment holds only what a step added, so S3 bytes per step stay flat too,
and a retried write of the same segment is the same object (idempotent).

With ``AGENT_PAYLOAD_KEYS`` set, each segment is stored encrypted as the payloads in history are
(core/codec.py: the object is a serialised encrypted ``Payload``), and named by a keyed digest of
its JSON; segments stored before keys were set (plain JSON) are still read.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from typing import Any

import obstore
from obstore.exceptions import BaseError as ObjectStoreError
from obstore.exceptions import NotFoundError
from pydantic import BaseModel

from core.codec import EncryptionCodec, MissingPayloadKeyError, PayloadDecryptionError
from core.converter import payload_codec
from core.messages import ChatMessage
from core.s3 import object_store, payloads_bucket
from core.settings import env_name, get_settings

DEFAULT_PREFIX = "conversations"
#: Set to "off" to keep sending whole conversations (e.g. to measure the difference).
DISABLE_ENV = env_name("conversation_store")
#: Flattened conversations kept in memory, by head (one per recently active run; each entry is a
#: list of references to messages the segment cache already holds). A run whose head left it is
#: rebuilt from the segments on its next step, so keep it above the runs stepping at once
#: (the model activity's wire cache keeps as many).
FLAT_CACHE_SIZE = 256
_JSON = {"Content-Type": "application/json"}
_ENCRYPTED = {"Content-Type": "application/octet-stream"}


class ConversationStoreError(RuntimeError):
    """S3 refused a segment's read or write, or could not be reached; the model activity's
    attempt fails with it and Temporal retries it."""


def _first_line(exc: BaseException) -> str:
    """obstore's message without its multi-line debug dump."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class ConversationSegment(BaseModel):
    """What one step added to a conversation, and the segment before it."""

    parent: str | None
    messages: list[ChatMessage]


class ConversationStore:
    """Chained conversation segments in an S3 bucket, with an in-process cache.

    :param bucket: The bucket (``TEMPORAL_PAYLOADS_BUCKET`` by default, see :meth:`from_env`).
    :param prefix: Key prefix; objects are ``{prefix}/{sha256}.json``. Expire them with a
        lifecycle rule no shorter than your longest run (see deploy/README.md).
    :param store: An ``obstore`` store of that bucket; by default the process's cached one
        (:func:`core.s3.object_store`, at boto3's endpoint, region and credentials).
    :param cache_bytes: Upper bound on cached segment JSON; older entries are evicted first.
    :param codec: Encrypts segments as they are written and decrypts them as they are read
        (:func:`core.converter.payload_codec`, from ``AGENT_PAYLOAD_KEYS``); None stores plain JSON.
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = DEFAULT_PREFIX,
        store: Any | None = None,
        cache_bytes: int = 256 << 20,
        codec: EncryptionCodec | None = None,
    ) -> None:
        if not bucket:
            raise ValueError("ConversationStore needs a bucket name.")
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self._store = store
        self._cache: OrderedDict[str, tuple[ConversationSegment, int]] = OrderedDict()
        self._flat: OrderedDict[str, list[ChatMessage]] = OrderedDict()
        self._cache_bytes = cache_bytes
        self._cached = 0
        self._lock = threading.Lock()
        self._codec = codec if codec is not None else EncryptionCodec({})

    @classmethod
    def from_env(cls) -> ConversationStore | None:
        """A store in ``TEMPORAL_PAYLOADS_BUCKET`` (else ``TOOL_RESULTS_BUCKET``), or None when
        neither is set or ``AGENT_CONVERSATION_STORE=off``."""
        if get_settings().conversation_store == "off":
            return None
        bucket = payloads_bucket()
        return cls(bucket, codec=payload_codec()) if bucket else None

    async def _object_store(self) -> Any:
        if self._store is None:  # first use: boto3 resolves the configuration (maybe a HEAD), off the loop
            self._store = await asyncio.to_thread(object_store, self.bucket)
        return self._store

    def _key(self, digest: str) -> str:
        return f"{self.prefix}/{digest}.json"

    def _url(self, digest: str) -> str:
        return f"conversation segment s3://{self.bucket}/{self._key(digest)}"

    async def put(self, parent: str | None, messages: list[ChatMessage]) -> str:
        """Store a segment (unless this process already did); returns its digest, the new head.

        :raises ConversationStoreError: When S3 refuses the write or cannot be reached (after retries).
        """
        segment = ConversationSegment(parent=parent, messages=messages)
        data = segment.model_dump_json().encode()
        digest = self._codec.object_name(data)
        with self._lock:
            if digest in self._cache:
                return digest
        body = self._codec.seal_bytes(data)
        attributes = _JSON if body is data else _ENCRYPTED
        try:
            await obstore.put_async(await self._object_store(), self._key(digest), body, attributes=attributes)
        except (OSError, ObjectStoreError) as exc:  # obstore raises FileNotFoundError for a missing bucket
            raise ConversationStoreError(f"Could not write {self._url(digest)}: {_first_line(exc)}") from exc
        self._remember(digest, segment, len(data))
        return digest

    def cached(self, head: str) -> list[ChatMessage] | None:
        """The whole conversation ending at ``head`` if this process holds it flattened, else None.

        Memory only (no S3 call, nothing to await): the model activity asks this first and
        awaits :meth:`load` only on a miss.
        """
        with self._lock:
            messages = self._flat.get(head)
            if messages is None:
                return None
            self._flat.move_to_end(head)
            return list(messages)

    async def load(self, head: str) -> list[ChatMessage]:
        """The whole conversation ending at ``head``.

        :raises LookupError: When a segment of the chain is missing from the bucket.
        """
        with self._lock:
            if head in self._flat:
                self._flat.move_to_end(head)
                return list(self._flat[head])
        chain: list[ConversationSegment] = []
        digest: str | None = head
        prefix: list[ChatMessage] = []
        while digest is not None:
            with self._lock:
                if digest != head and digest in self._flat:
                    prefix = list(self._flat[digest])
                    break
            segment = await self._segment(digest)
            chain.append(segment)
            digest = segment.parent
        messages = prefix
        for segment in reversed(chain):
            messages.extend(segment.messages)
        self._remember_flat(head, messages)
        return list(messages)

    async def extend(
        self, head: str | None, parent_messages: list[ChatMessage], new_messages: list[ChatMessage]
    ) -> str:
        """Store ``new_messages`` after ``head`` and cache the flattened result; returns the new head."""
        digest = await self.put(head, new_messages)
        self._remember_flat(digest, parent_messages + new_messages)
        return digest

    async def _segment(self, digest: str) -> ConversationSegment:
        with self._lock:
            if digest in self._cache:
                self._cache.move_to_end(digest)
                return self._cache[digest][0]
        try:
            stored = await obstore.get_async(await self._object_store(), self._key(digest))
            body = (await stored.bytes_async()).to_bytes()
        except (FileNotFoundError, NotFoundError) as exc:  # obstore raises the former for a 404 GET
            raise LookupError(f"Conversation segment {self._url(digest)} is missing.") from exc
        except (OSError, ObjectStoreError) as exc:
            raise ConversationStoreError(f"Could not read {self._url(digest)}: {_first_line(exc)}") from exc
        try:
            segment = ConversationSegment.model_validate_json(self._codec.open_bytes(body))
        except (MissingPayloadKeyError, PayloadDecryptionError) as exc:
            raise type(exc)(f"{self._url(digest)}: {exc}") from None
        self._remember(digest, segment, len(body))
        return segment

    def _remember(self, digest: str, segment: ConversationSegment, size: int) -> None:
        with self._lock:
            if digest in self._cache:
                return
            self._cache[digest] = (segment, size)
            self._cached += size
            while self._cached > self._cache_bytes and self._cache:
                _, (_, evicted) = self._cache.popitem(last=False)
                self._cached -= evicted

    def _remember_flat(self, head: str, messages: list[ChatMessage]) -> None:
        with self._lock:
            self._flat[head] = messages
            while len(self._flat) > FLAT_CACHE_SIZE:
                self._flat.popitem(last=False)
