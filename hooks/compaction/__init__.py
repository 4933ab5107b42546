"""Context compaction: keep a long run's conversation inside the model's context window (Haystack 3.x semantics).

``CompactionHook`` decides *when* (before each model call, from the ``context_tokens`` anchor);
a ``Compactor`` decides *how*: drop old turns and steps (``SlidingWindowCompactor``), prune old
tool results (``ToolResultPruningCompactor``), move them to a store (``ToolResultOffloadCompactor``)
or summarise with a model (``SummarizationCompactor``, whose model is a ``ChatGeneratorSpec``).
Token counters measure the conversation (``TiktokenCounter`` is Haystack's name for
``TiktokenTokenCounter``).
"""

from hooks.compaction.chat_generator import ChatGeneratorSpec
from hooks.compaction.encodings import load_encoding, preload_names
from hooks.compaction.hooks import CompactionHook, estimate_context_tokens
from hooks.compaction.protocol import Compactor
from hooks.compaction.sliding_window import SlidingWindowCompactor
from hooks.compaction.summarization import SummarizationCompactor
from hooks.compaction.token_counters import (
    ApproximateTokenCounter,
    TiktokenCounter,
    TiktokenTokenCounter,
    TokenCounter,
)
from hooks.compaction.tool_result_offload import ToolResultOffloadCompactor
from hooks.compaction.tool_result_pruning import ToolResultPruningCompactor
from hooks.family import HookFamily


def _preload_configured_encodings() -> None:
    # Only what AGENT_PRELOAD_ENCODINGS names: o200k_base alone is ~76 MB of every worker's RSS,
    # and most agents never count tokens; a run that does loads its encoding on first use.
    for name in preload_names():
        load_encoding(name)


FAMILY = HookFamily(name="compaction", warm_up=_preload_configured_encodings)

__all__ = [
    "ApproximateTokenCounter",
    "ChatGeneratorSpec",
    "CompactionHook",
    "Compactor",
    "SlidingWindowCompactor",
    "SummarizationCompactor",
    "TiktokenCounter",
    "TiktokenTokenCounter",
    "TokenCounter",
    "ToolResultOffloadCompactor",
    "ToolResultPruningCompactor",
    "estimate_context_tokens",
]
