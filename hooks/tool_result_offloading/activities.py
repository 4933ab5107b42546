"""The offloading family's store write, under the names this family has always given it: the
activity and its workflow-side call live in ``activities/result_store.py``, shared with the
compaction family's ``ToolResultOffloadCompactor``.
"""

from activities.result_store import STORE_TOOL_RESULT_ACTIVITY, store_result, store_tool_result
from activities.result_store import StoreResultInput as StoreToolResultInput

__all__ = ["STORE_TOOL_RESULT_ACTIVITY", "StoreToolResultInput", "store_result", "store_tool_result"]
