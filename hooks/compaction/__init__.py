"""Context compaction: keep a long run's conversation inside the model's context window (Haystack 3.x semantics).

``CompactionHook`` decides *when* (before each model call, from the ``context_tokens`` anchor);
a ``Compactor`` decides *how*: drop old turns and steps (``SlidingWindowCompactor``), prune old
tool results (``ToolResultPruningCompactor``) or summarise with the model
(``SummarizationCompactor``). Token counters measure the conversation.
"""

from hooks.compaction.hooks import CompactionHook, estimate_context_tokens
from hooks.compaction.sliding_window import SlidingWindowCompactor
from hooks.compaction.summarization import SummarizationCompactor
from hooks.compaction.token_counters import ApproximateTokenCounter, TiktokenTokenCounter, TokenCounter
from hooks.compaction.tool_result_pruning import ToolResultPruningCompactor
from hooks.compaction.types import Compactor

__all__ = [
    "ApproximateTokenCounter",
    "CompactionHook",
    "Compactor",
    "SlidingWindowCompactor",
    "SummarizationCompactor",
    "TiktokenTokenCounter",
    "TokenCounter",
    "ToolResultPruningCompactor",
    "estimate_context_tokens",
]
