"""Encryption at rest: an AES-256-GCM ``PayloadCodec`` over every payload (``AGENT_PAYLOAD_KEYS``).

The format is the one of Temporal's samples (samples-python ``encryption/codec.py``, and the Go
and TypeScript samples), so Temporal's tools and other SDKs can read it: the encrypted payload's
metadata is ``encoding: binary/encrypted`` and ``encryption-key-id: <id>``, its data a random
12-byte nonce followed by the AES-GCM ciphertext (with its 16-byte tag) of the whole original
``Payload`` message, metadata included.

``AGENT_PAYLOAD_KEYS`` is ``KEY_ID:BASE64[,KEY_ID:BASE64...]``, each key 32 random bytes: the
first entry encrypts, every entry decrypts, so a key is rotated by putting a new one first and
keeping the old ones until no stored payload needs them (docs/operations.md).

A process without the key a payload names raises :class:`MissingPayloadKeyError` naming the key
id: in a worker that fails the workflow task (Temporal retries it, so deploying the key resumes
the run), in a client the call.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
from collections.abc import Mapping, Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

#: Metadata of an encrypted payload (as Temporal's samples write it).
ENCRYPTED_ENCODING = b"binary/encrypted"
KEY_ID_METADATA = "encryption-key-id"
NONCE_BYTES = 12
KEY_BYTES = 32
#: What a key id may be: it is written, in clear, into every payload's metadata.
KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
KEYS_ENV = "AGENT_PAYLOAD_KEYS"


class MissingPayloadKeyError(RuntimeError):
    """A payload is encrypted under a key id this process does not have."""


class PayloadDecryptionError(RuntimeError):
    """A payload's ciphertext does not authenticate under the key its id names (other key
    material under the same id, or the bytes were altered)."""


def parse_payload_keys(text: str) -> dict[str, bytes]:
    """The keys of an ``AGENT_PAYLOAD_KEYS`` value, in order (the first encrypts).

    :param text: ``KEY_ID:BASE64`` entries separated by commas; BASE64 is standard or URL-safe
        base64 of exactly 32 bytes.
    :raises ValueError: For an entry without ``:``, a bad key id, a repeated key id, or a key that
        is not base64 of 32 bytes. The message names the entry by position and key id, never the
        key material.
    """
    keys: dict[str, bytes] = {}
    entries = [entry.strip() for entry in text.split(",")]
    for number, entry in enumerate(entries, 1):
        key_id, colon, encoded = (part.strip() for part in entry.partition(":"))
        if not colon:  # the entry may be a bare key: name only its position
            raise ValueError(f"entry {number} has no ':'; each entry is KEY_ID:BASE64")
        where = f"entry {number}" + (f" ({key_id!r})" if KEY_ID.fullmatch(key_id) else "")
        if not KEY_ID.fullmatch(key_id):
            raise ValueError(f"{where}: the key id must be 1-64 letters, digits, '.', '_' or '-'")
        if key_id in keys:
            raise ValueError(f"{where}: the key id is given twice")
        try:
            standard = encoded.replace("-", "+").replace("_", "/")  # URL-safe base64 too
            key = base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"{where}: the key is not base64") from None
        if len(key) != KEY_BYTES:
            raise ValueError(f"{where}: the key has {len(key)} bytes, AES-256 needs {KEY_BYTES}")
        keys[key_id] = key
    return keys


def new_payload_key() -> str:
    """A fresh random key, base64 (for ``KEY_ID:`` + this in ``AGENT_PAYLOAD_KEYS``)."""
    return base64.b64encode(os.urandom(KEY_BYTES)).decode()


def is_encrypted(payload: Payload) -> bool:
    """Whether ``payload`` is one this codec's format wrote."""
    return payload.metadata.get("encoding") == ENCRYPTED_ENCODING


class EncryptionCodec(PayloadCodec):
    """AES-256-GCM over every payload, the first key encrypting, all of them decrypting.

    With no keys it encrypts nothing, and still refuses an encrypted payload with an error that
    names its key id (instead of the payload converter's "unknown encoding").

    :param keys: Key id -> 32-byte key, in order (:func:`parse_payload_keys`).
    :raises ValueError: For a key that is not 32 bytes or a bad key id.
    """

    def __init__(self, keys: Mapping[str, bytes]) -> None:
        super().__init__()
        for key_id, key in keys.items():
            if not KEY_ID.fullmatch(key_id) or len(key) != KEY_BYTES:
                raise ValueError(
                    f"Payload key {key_id!r}: the id must match {KEY_ID.pattern}, the key {KEY_BYTES} bytes"
                )
        self._ciphers = {key_id: AESGCM(key) for key_id, key in keys.items()}
        self.key_ids = tuple(keys)
        #: The key id new payloads are encrypted under (None: none are).
        self.encrypting_key_id = self.key_ids[0] if self.key_ids else None
        # Names of stored objects are keyed digests of their plaintext, so a name reveals nothing
        # to whoever can guess the content but lacks the key.
        self._name_key = (
            hashlib.sha256(b"durable-agent object names\0" + keys[self.key_ids[0]]).digest() if keys else None
        )

    def encrypt(self, payload: Payload) -> Payload:
        """``payload`` encrypted under the first key (unchanged when there is none)."""
        if self.encrypting_key_id is None:
            return payload
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._ciphers[self.encrypting_key_id].encrypt(nonce, payload.SerializeToString(), None)
        return Payload(
            metadata={"encoding": ENCRYPTED_ENCODING, KEY_ID_METADATA: self.encrypting_key_id.encode()},
            data=nonce + sealed,
        )

    def decrypt(self, payload: Payload) -> Payload:
        """The payload ``payload`` encrypts (``payload`` itself when it is not encrypted).

        :raises MissingPayloadKeyError: Its key id is not among this process's keys.
        :raises PayloadDecryptionError: It does not authenticate under that key.
        """
        if not is_encrypted(payload):
            return payload
        key_id = payload.metadata.get(KEY_ID_METADATA, b"").decode(errors="replace")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            have = f"it has {', '.join(repr(k) for k in self.key_ids)}" if self.key_ids else f"{KEYS_ENV} is not set"
            raise MissingPayloadKeyError(
                f"A payload is encrypted under key id {key_id!r}, which this process does not have ({have}). "
                f"Add that key to {KEYS_ENV} (after the encrypting key) and restart; a waiting run then resumes."
            )
        try:
            plain = cipher.decrypt(payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:], None)
        except InvalidTag:
            raise PayloadDecryptionError(
                f"A payload under key id {key_id!r} does not decrypt with this process's key of that id "
                "(another key under the same id, or the payload was altered)."
            ) from None
        return Payload.FromString(plain)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Encrypt each payload under the first key."""
        return [self.encrypt(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Decrypt each encrypted payload; others pass unchanged.

        :raises MissingPayloadKeyError: As :meth:`decrypt`.
        :raises PayloadDecryptionError: As :meth:`decrypt`.
        """
        return [self.decrypt(payload) for payload in payloads]

    def object_name(self, data: bytes) -> str:
        """The hex digest that names stored ``data``: SHA-256 without keys, else an HMAC-SHA256
        under a key derived from the encrypting key."""
        if self._name_key is None:
            return hashlib.sha256(data).hexdigest()
        return hmac.new(self._name_key, data, hashlib.sha256).hexdigest()

    def seal_bytes(self, data: bytes, encoding: bytes = b"json/plain") -> bytes:
        """``data`` as a stored object's body: the serialised encrypted payload holding it, or
        ``data`` itself without keys."""
        if self.encrypting_key_id is None:
            return data
        return self.encrypt(Payload(metadata={"encoding": encoding}, data=data)).SerializeToString()

    def open_bytes(self, body: bytes) -> bytes:
        """The data of a body :meth:`seal_bytes` wrote; a JSON body (stored without keys) as it is.

        :raises MissingPayloadKeyError: As :meth:`decrypt`.
        :raises PayloadDecryptionError: As :meth:`decrypt`, or the body is neither JSON nor a payload.
        """
        if body[:1] in (b"{", b"["):
            return body
        try:
            payload = Payload.FromString(body)
        except Exception:  # protobuf's DecodeError
            raise PayloadDecryptionError("A stored object is neither JSON nor an encrypted payload.") from None
        if not is_encrypted(payload):
            raise PayloadDecryptionError("A stored object is neither JSON nor an encrypted payload.")
        return self.decrypt(payload).data
