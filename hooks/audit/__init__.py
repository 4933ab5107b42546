"""Audit: one record per tool call, written to an audit store through this family's activity.

``AuditHook`` (registered at ``before_tool`` and ``after_tool``) builds an :class:`AuditRecord`
per tool call of each step: tool, call id, arguments hash, the confirmation decision and
approver, error, result size and offload pointer. The ``write_audit_records`` activity, which
this family declares for the worker, writes them to a ``FileSystemAuditStore`` or an
``S3AuditStore``, one JSON object per call under the run's own directory or prefix.
"""

from hooks.audit.activities import (
    WRITE_AUDIT_RECORDS_ACTIVITY,
    WriteAuditRecordsInput,
    record_key,
    write_audit_records,
    write_records,
)
from hooks.audit.dataclasses import AuditRecord
from hooks.audit.hooks import AuditHook, AuditLedger
from hooks.audit.stores import AuditStoreError, FileSystemAuditStore, S3AuditStore
from hooks.family import HookFamily

#: What the rest of the system provides for auditing: the activity that writes the records.
FAMILY = HookFamily(name="audit", activities=[write_audit_records])

__all__ = [
    "FAMILY",
    "WRITE_AUDIT_RECORDS_ACTIVITY",
    "AuditHook",
    "AuditLedger",
    "AuditRecord",
    "AuditStoreError",
    "FileSystemAuditStore",
    "S3AuditStore",
    "WriteAuditRecordsInput",
    "record_key",
    "write_audit_records",
    "write_records",
]
