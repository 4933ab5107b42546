"""Tool-result offloading: big tool results go to a store, the conversation keeps a pointer.

Same names and rules as Haystack's ``haystack.hooks.tool_result_offloading``; the store writes
run in the ``store_tool_result`` activity (``activities/result_store.py``, shared with compaction's
``ToolResultOffloadCompactor`` and registered by every agent worker), or in the tool activity
itself (``activities.tool_invocation.offload_in_activity``).
"""

from temporalio.client import Client

from activities.result_store import STORE_TOOL_RESULT_ACTIVITY
from core.checks import check_bucket
from core.s3 import tool_results_bucket
from core.tool_records import OFFLOADED_META_KEY
from hooks.family import HookFamily
from hooks.tool_result_offloading.hooks import RESULT_STORE_CONTEXT_KEY, OffloadTask, ToolResultOffloadHook
from hooks.tool_result_offloading.policies import AlwaysOffload, NeverOffload, OffloadOverChars, OffloadPolicyBase
from hooks.tool_result_offloading.protocol import OffloadPolicy, ToolResultStore
from hooks.tool_result_offloading.reader import read_tool_result
from hooks.tool_result_offloading.stores import (
    FileSystemToolResultStore,
    S3ToolResultStore,
    ToolResultNotFoundError,
    ToolResultStoreError,
    store_from_environment,
)


async def _check_tool_results_bucket(client: Client) -> None:
    # A worker whose TOOL_RESULTS_BUCKET is missing would fail at the first offload, mid-run.
    if (bucket := tool_results_bucket()) is not None:
        await check_bucket(bucket, "TOOL_RESULTS_BUCKET")


FAMILY = HookFamily(name="tool_result_offloading", check=_check_tool_results_bucket)

__all__ = [
    "OFFLOADED_META_KEY",
    "RESULT_STORE_CONTEXT_KEY",
    "STORE_TOOL_RESULT_ACTIVITY",
    "AlwaysOffload",
    "FileSystemToolResultStore",
    "NeverOffload",
    "OffloadOverChars",
    "OffloadPolicy",
    "OffloadPolicyBase",
    "OffloadTask",
    "S3ToolResultStore",
    "ToolResultOffloadHook",
    "ToolResultNotFoundError",
    "ToolResultStore",
    "ToolResultStoreError",
    "read_tool_result",
    "store_from_environment",
]
