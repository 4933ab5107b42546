"""``SlidingWindowCompactor``: drop the oldest complete turns and steps, keep the instructions and the task."""

from __future__ import annotations

from typing import Any

from core.messages import ChatMessage, ChatRole
from core.serialization import default_from_dict, default_to_dict
from hooks.compaction.protocol import Compactor
from hooks.compaction.token_counters import TokenCounter
from hooks.compaction.utils import (
    COMPACTION_META_KEY,
    Landmarks,
    current_task_steps,
    flatten,
    historical_turns,
    is_compaction_message,
    messages_at,
    messages_except,
)

STRATEGY = "sliding_window"
_NUM_REMOVED = "{num_removed}"
DEFAULT_OMISSION_NOTE = (
    f"[{_NUM_REMOVED} earlier messages were removed from this conversation to free up context and cannot be recovered.]"
)


def _is_note(message: ChatMessage) -> bool:
    return is_compaction_message(message, STRATEGY, ChatRole.USER)


def _groups_that_fit(messages: list[ChatMessage], groups: list[list[int]], budget: int, counter: TokenCounter) -> int:
    """How many of the newest ``groups`` fit in ``budget``, adding newest first and stopping at the first misfit."""
    fitted = 0
    for group in reversed(groups):
        tokens = counter.count(messages_at(messages, group))
        if tokens > budget:
            break
        budget -= tokens
        fitted += 1
    return fitted


class SlidingWindowCompactor(Compactor):
    """Keeps the instructions, the current task and as much complete recent conversation as fits.

    Leading system messages and the task anchor (the latest real user message) are always kept.
    History is kept in complete turns, newest first, while they fit next to the whole current task.
    When the current task alone is over budget, all history goes and the task's oldest steps
    (an assistant message with all its tool results) are dropped until the rest fits, always
    keeping the newest ``min_keep_steps``.

    An omission note (a user message, marked in ``meta["context_compaction"]``) stands where the
    removed messages were: after the instructions when only history was removed, after the task
    anchor when the task's own steps were. A later compaction folds an earlier note into its own,
    so there is at most one.

    :param min_keep_steps: The fewest newest steps of the current task to keep even over budget;
        ``0`` lets every step go.
    :param omission_note: Text of the note (``{num_removed}`` is replaced by how many messages were
        removed), or None/empty to remove silently.
    :raises ValueError: If ``min_keep_steps`` is negative.
    """

    def __init__(self, *, min_keep_steps: int = 1, omission_note: str | None = DEFAULT_OMISSION_NOTE) -> None:
        if min_keep_steps < 0:
            raise ValueError(f"`min_keep_steps` must be at least 0, got {min_keep_steps}.")
        self.min_keep_steps = min_keep_steps
        self.omission_note = omission_note

    def compact(
        self, messages: list[ChatMessage], target_tokens: int, token_counter: TokenCounter
    ) -> list[ChatMessage] | None:
        """The surviving conversation with its note, or None when nothing but an earlier note could go."""
        if token_counter.count(messages) <= target_tokens:
            return None
        kept_indices, note_at = self._plan(messages, target_tokens, token_counter)
        removed = messages_except(messages, kept_indices)
        if not removed:
            return None
        kept = messages_at(messages, kept_indices)
        if not self.omission_note:
            return kept
        if all(_is_note(message) for message in removed):
            return None  # swapping one note for another frees nothing
        marker = {"strategy": STRATEGY, "removed_messages": len(removed), "kept_messages": len(kept)}
        note = ChatMessage.from_user(
            self.omission_note.replace(_NUM_REMOVED, str(len(removed))), meta={COMPACTION_META_KEY: marker}
        )
        return [*kept[:note_at], note, *kept[note_at:]]

    def _plan(self, messages: list[ChatMessage], target_tokens: int, counter: TokenCounter) -> tuple[list[int], int]:
        """Indices to keep, in order, and where in the kept list the note goes."""
        marks = Landmarks.of(messages)
        instructions = list(range(marks.system_end))
        # An earlier note is left out of its turn, so it is folded into the note this compaction writes.
        turns = [[i for i in turn if not _is_note(messages[i])] for turn in historical_turns(messages, marks)]
        steps = current_task_steps(messages, marks)
        budget = target_tokens - counter.count(messages_at(messages, [*instructions, *marks.anchor]))
        task_tokens = counter.count(messages_at(messages, flatten(steps)))
        if task_tokens > budget:
            kept_turns: list[list[int]] = []
            kept_count = max(_groups_that_fit(messages, steps, budget, counter), min(self.min_keep_steps, len(steps)))
            kept_steps = steps[len(steps) - kept_count :]
        else:
            fitted = _groups_that_fit(messages, turns, budget - task_tokens, counter)
            kept_turns = turns[len(turns) - fitted :]
            kept_steps = steps
        kept_turn_indices = flatten(kept_turns)
        kept = [*instructions, *kept_turn_indices, *marks.anchor, *flatten(kept_steps)]
        steps_trimmed = len(kept_steps) < len(steps)
        note_at = len(instructions) + len(kept_turn_indices) + len(marks.anchor) if steps_trimmed else len(instructions)
        return kept, note_at

    def to_dict(self) -> dict[str, Any]:
        """Serialise the compactor."""
        return default_to_dict(self, min_keep_steps=self.min_keep_steps, omission_note=self.omission_note)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SlidingWindowCompactor:
        """Rebuild the compactor from :meth:`to_dict`'s output."""
        return default_from_dict(cls, data)
