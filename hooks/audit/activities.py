"""The audit family's I/O: the ``write_audit_records`` activity, and the workflow-side call to it.

``AuditHook`` builds a step's records in workflow code and awaits :func:`write_records` once per
step (one activity for all the calls of the step, so the history grows by one activity per step,
not per call). The activity rebuilds the store from its descriptor on the worker and writes each
record as JSON under ``step-{step:06d}/{encoded tool_call_id}.json`` (:func:`record_key`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from core.serialization import object_from_dict
from core.tool_records import encode_key_segment
from core.trust import Slot
from hooks.audit.dataclasses import AuditRecord

#: Activity name (part of the wire contract between workflows and workers).
WRITE_AUDIT_RECORDS_ACTIVITY = "write_audit_records"
#: ``ApplicationError.type`` of a write retrying cannot fix (a key or run id the store refuses).
AUDIT_RECORD_REFUSED = "AuditRecordRefused"
#: What a run's input may name as the audit store (core.trust checks it before construction).
AUDIT_STORE_SLOT = Slot("audit store", methods=("write",))

# No maximum_attempts: an audit record must not be lost, so an unreachable store holds the run
# at this step (retrying) until it is back, rather than letting tool calls go unrecorded.
AUDIT_RETRY_POLICY = RetryPolicy(initial_interval=timedelta(milliseconds=500), maximum_interval=timedelta(seconds=10))


class WriteAuditRecordsInput(BaseModel):
    """Input of ``write_audit_records``.

    :param store: The store descriptor (``store.to_dict()``).
    :param run_id: The run the records belong to; the store writes under it.
    :param records: The records to write (usually one step's).
    """

    store: dict[str, Any]
    run_id: str
    records: list[AuditRecord]


def record_key(step: int, tool_call_id: str) -> str:
    """The key of a record inside its run: ``step-{step:06d}/{encoded tool_call_id}.json``.

    The step is zero-padded so keys sort in step order; the call id is percent-encoded into one
    segment, so distinct ids never share a key.

    :raises ValueError: For a negative step, or a call id of ``""``/``.``/``..``.
    """
    if step < 0:
        raise ValueError(f"An audit record's step must be >= 0, got {step}.")
    return f"step-{step:06d}/{encode_key_segment(tool_call_id)}.json"


def write_records_to_store(store: Any, run_id: str, records: Sequence[AuditRecord]) -> list[str]:
    """Write ``records`` with ``store.write`` (blocking I/O); returns their references in order.

    :param store: An audit store (``write(run_id, key, content)``).
    :param run_id: The run the records belong to.
    :param records: The records; each must name ``run_id``.
    :raises ValueError: If a record names another run, or the store refuses a key.
    :raises AuditStoreError: If the store cannot write (``hooks.audit.stores``).
    """
    references = []
    for record in records:
        if record.run_id != run_id:
            raise ValueError(f"Audit record of run '{record.run_id}' cannot be written under run '{run_id}'.")
        content = record.model_dump_json(indent=2)
        references.append(store.write(run_id, record_key(record.step, record.tool_call_id), content))
    return references


@activity.defn(name=WRITE_AUDIT_RECORDS_ACTIVITY)
async def write_audit_records(request: WriteAuditRecordsInput) -> list[str]:
    """Write each record of ``request``; returns their references (paths or ``s3://`` URIs).

    A refused key or run id is not retried (``AUDIT_RECORD_REFUSED``); store errors are.
    """
    try:
        store = object_from_dict(request.store, AUDIT_STORE_SLOT)
        return await asyncio.to_thread(write_records_to_store, store, request.run_id, request.records)
    except ValueError as exc:
        raise ApplicationError(str(exc), type=AUDIT_RECORD_REFUSED, non_retryable=True) from exc


async def write_records(request: WriteAuditRecordsInput) -> list[str]:
    """Workflow side: run ``write_audit_records`` (retried until the store takes the records).

    :raises temporalio.exceptions.ActivityError: If the store refused a record (not retried).
    """
    steps = sorted({record.step for record in request.records})
    return await workflow.execute_activity(
        write_audit_records,
        request,
        start_to_close_timeout=timedelta(minutes=1),
        retry_policy=AUDIT_RETRY_POLICY,
        summary=f"audit {len(request.records)} call(s) of step {', '.join(map(str, steps))}",
    )
