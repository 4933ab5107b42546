"""The payload driver's limits: a claim read from history is data anyone who starts a run wrote.

Temporal's ``S3StorageDriver`` fetches whatever bucket and key a claim names, with the process's
credentials, and a content-hash mismatch names the object's real hash. A client could thus
hand-craft an ExternalStorage reference to another tenant's object (``s3://other-bucket/...``)
and have the worker fetch it into the run. :class:`ScopedS3StorageDriver` reads only claims in
its own bucket under its namespace's prefix (``v0/ns/<namespace>/``, where the driver writes;
or ``v0/d/sha256/`` for a payload encoded outside any run), whose key ends with the claim's
content hash as every key the driver writes does, and says only that the hash did not match.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.contrib.aws.s3driver import S3StorageDriver
from temporalio.converter import StorageDriverClaim, StorageDriverRetrieveContext

_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!-_.*'()")
_SHA256 = re.compile(r"[0-9a-f]{64}")
#: Where the driver writes a payload encoded outside any workflow or activity (no namespace known).
CONTEXT_FREE_PREFIX = "v0/d/sha256/"


class PayloadClaimRefused(ValueError):
    """A payload reference names an object outside this process's payloads bucket and namespace."""


def namespace_prefix(namespace: str) -> str:
    """The key prefix ``S3StorageDriver`` writes a namespace's payloads under: ``v0/ns/<encoded>/``."""
    encoded = "".join(chr(b) if chr(b) in _SAFE else f"%{b:02X}" for b in namespace.encode("utf-8")) or "null"
    return f"v0/ns/{encoded}/"


class ScopedS3StorageDriver(S3StorageDriver):
    """``S3StorageDriver`` that retrieves only claims in ``bucket`` under ``namespace``'s prefix.

    :param namespace: The Temporal namespace of this process's runs (``TEMPORAL_NAMESPACE``).
    :param kwargs: ``S3StorageDriver``'s (``client``, ``bucket``, ...); ``bucket`` must be a name.
    """

    def __init__(self, *, namespace: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(self._bucket, str):
            raise ValueError("ScopedS3StorageDriver needs one bucket name.")
        self.bucket = self._bucket
        self.prefix = namespace_prefix(namespace)

    def check_claim(self, claim: StorageDriverClaim) -> None:
        """Refuse a claim outside this bucket and prefix, or with a malformed key or hash.

        :raises PayloadClaimRefused: Naming the claim's bucket and key and what is allowed.
        """
        data = claim.claim_data
        bucket, key = data.get("bucket"), data.get("key")
        where = f"s3://{bucket}/{key}"
        if bucket != self.bucket:
            raise PayloadClaimRefused(
                f"Payload reference {where} is outside this worker's payloads bucket "
                "(TEMPORAL_PAYLOADS_BUCKET, else TOOL_RESULTS_BUCKET): refused."
            )
        digest = str(data.get("hash_value", ""))
        if data.get("hash_algorithm") != "sha256" or not _SHA256.fullmatch(digest):
            raise PayloadClaimRefused(f"Payload reference {where} has no sha256 content hash: refused.")
        in_namespace = isinstance(key, str) and key.startswith(self.prefix) and ".." not in key.split("/")
        if not (in_namespace or key == f"{CONTEXT_FREE_PREFIX}{digest}") or not key.endswith(f"/d/sha256/{digest}"):
            raise PayloadClaimRefused(
                f"Payload reference {where} is not a payload object of this namespace (keys start with "
                f"s3://{self.bucket}/{self.prefix} (TEMPORAL_NAMESPACE) and end with their content hash): refused."
            )

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        """Check every claim first (nothing is fetched if one is refused), then fetch them.

        :raises PayloadClaimRefused: For a claim :meth:`check_claim` refuses.
        :raises ValueError: When an object's content does not match its claim's hash (the message
            does not give the object's real hash).
        """
        for claim in claims:
            self.check_claim(claim)
        try:
            return await super().retrieve(context, claims)
        except ValueError as exc:
            if "integrity check failed" not in str(exc):
                raise
        raise ValueError(
            "A payload object's content does not match the content hash its reference names (changed or "
            "replaced in the bucket): refused."
        )
