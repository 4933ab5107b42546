"""How compactors read a conversation: its landmarks, its turns and steps, and shared helpers.

Vocabulary (Haystack's):

- the **instructions** are the leading system messages;
- the **task anchor** is the latest user message that compaction did not write;
- **history** runs from the instructions to the task anchor, the **current task** after it;
- a **turn** is a real user message and everything up to the next one;
- a **step** is an assistant message and the tool results right after it, so a step never separates
  a tool call from its results.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from core.messages import ChatMessage, ChatRole
from hooks.compaction.token_counters import TokenCounter

#: Meta key marking a message a compactor wrote; its value says which strategy wrote it.
COMPACTION_META_KEY = "context_compaction"


def is_compaction_message(message: ChatMessage, strategy: str, role: ChatRole | None = None) -> bool:
    """Whether compaction strategy ``strategy`` wrote ``message`` (and it has ``role``, when given)."""
    marker = message.meta.get(COMPACTION_META_KEY)
    return isinstance(marker, dict) and marker.get("strategy") == strategy and (role is None or message.role == role)


def _is_real_user(message: ChatMessage) -> bool:
    return message.role == ChatRole.USER and COMPACTION_META_KEY not in message.meta


@dataclass(frozen=True)
class Landmarks:
    """Where the instructions end and where the current task starts.

    :param system_end: Index just past the leading system messages (compaction-written ones excluded).
    :param task_index: Index of the task anchor, or None when there is no real user message.
    """

    system_end: int
    task_index: int | None

    @classmethod
    def of(cls, messages: Sequence[ChatMessage]) -> Landmarks:
        """Find the landmarks of ``messages``."""
        system_end = next(
            (i for i, m in enumerate(messages) if m.role != ChatRole.SYSTEM or COMPACTION_META_KEY in m.meta),
            len(messages),
        )
        task_index = next((i for i in range(len(messages) - 1, -1, -1) if _is_real_user(messages[i])), None)
        return cls(system_end=system_end, task_index=task_index)

    @property
    def history_end(self) -> int:
        """End (exclusive) of history: the task anchor, or the instructions' end when there is none."""
        return self.task_index if self.task_index is not None else self.system_end

    @property
    def task_start(self) -> int:
        """First index after the task anchor (the instructions' end when there is none)."""
        return self.task_index + 1 if self.task_index is not None else self.system_end

    @property
    def anchor(self) -> list[int]:
        """The task anchor's index as a list (empty when there is none)."""
        return [] if self.task_index is None else [self.task_index]


def last_assistant_index(messages: Sequence[ChatMessage]) -> int:
    """Index of the last assistant message, or -1."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == ChatRole.ASSISTANT:
            return index
    return -1


def step_groups(messages: Sequence[ChatMessage], start: int) -> list[list[int]]:
    """Steps from ``start`` on, as index groups: an assistant message and the tool results right after it.

    Messages that are neither (a user note, say) belong to no step.
    """
    groups: list[list[int]] = []
    index = start
    while index < len(messages):
        if messages[index].role != ChatRole.ASSISTANT:
            index += 1
            continue
        end = index + 1
        while end < len(messages) and messages[end].tool_call_results:
            end += 1
        groups.append(list(range(index, end)))
        index = end
    return groups


def current_task_steps(messages: Sequence[ChatMessage], landmarks: Landmarks) -> list[list[int]]:
    """The current task's steps, oldest first."""
    return step_groups(messages, landmarks.task_start)


def historical_turns(messages: Sequence[ChatMessage], landmarks: Landmarks) -> list[list[int]]:
    """History's complete turns, oldest first; messages before the first real user message belong to none."""
    starts = [i for i in range(landmarks.system_end, landmarks.history_end) if _is_real_user(messages[i])]
    ends = [*starts[1:], landmarks.history_end] if starts else []
    return [list(range(start, end)) for start, end in zip(starts, ends, strict=True)]


def messages_at(messages: Sequence[ChatMessage], indices: Sequence[int]) -> list[ChatMessage]:
    """The messages at ``indices``, in that order."""
    return [messages[i] for i in indices]


def messages_except(messages: Sequence[ChatMessage], indices: Sequence[int]) -> list[ChatMessage]:
    """The messages not at ``indices``, in conversation order."""
    left_out = set(indices)
    return [m for i, m in enumerate(messages) if i not in left_out]


def flatten(groups: Sequence[Sequence[int]]) -> list[int]:
    """Index groups joined into one list."""
    return [index for group in groups for index in group]


def protected_result_indices(messages: Sequence[ChatMessage], min_keep_steps: int) -> set[int]:
    """Indices of the tool results of the newest ``min_keep_steps`` steps that have results."""
    steps_with_results = [group[1:] for group in step_groups(messages, 0) if len(group) > 1]
    return set(flatten(steps_with_results[-min_keep_steps:])) if min_keep_steps > 0 else set()


def check_result_rewriting(min_keep_steps: int, min_tokens: int) -> None:
    """The settings every compactor that rewrites tool results shares.

    :raises ValueError: For ``min_keep_steps < 1`` (the newest tool-calling step holds results the
        model has not acted on yet) or ``min_tokens < 0``.
    """
    if min_keep_steps < 1:
        raise ValueError(
            f"`min_keep_steps` must be at least 1, got {min_keep_steps}: the newest tool-calling step holds "
            "results the model has not acted on yet."
        )
    if min_tokens < 0:
        raise ValueError(f"`min_tokens` must be at least 0, got {min_tokens}.")


def replace_tool_results_until_target(
    messages: list[ChatMessage],
    *,
    target_tokens: int,
    token_counter: TokenCounter,
    min_keep_steps: int,
    replace: Callable[[ChatMessage, int], tuple[ChatMessage, int] | None],
) -> list[ChatMessage] | None:
    """Rewrite tool results, oldest first, until the conversation fits ``target_tokens``.

    The conversation is counted once; each replacement then lowers the running total by the tokens
    it reports saving, so the whole conversation is never recounted. Results of the newest
    ``min_keep_steps`` steps that have results are never offered to ``replace``.

    :param replace: Gets a tool-result message and its index; returns its replacement and the tokens
        saved, or None.
    :returns: The new list, or None when nothing was replaced.
    """

    async def replace_now(message: ChatMessage, index: int) -> tuple[ChatMessage, int] | None:
        return replace(message, index)

    # One loop serves both: with a replace that never suspends, the coroutine finishes on its first step.
    loop = replace_tool_results_until_target_async(
        messages,
        target_tokens=target_tokens,
        token_counter=token_counter,
        min_keep_steps=min_keep_steps,
        replace=replace_now,
    )
    try:
        loop.send(None)
    except StopIteration as finished:
        return finished.value
    loop.close()
    raise RuntimeError("replace_tool_results_until_target: the loop suspended, which a sync replace cannot do.")


async def replace_tool_results_until_target_async(
    messages: list[ChatMessage],
    *,
    target_tokens: int,
    token_counter: TokenCounter,
    min_keep_steps: int,
    replace: Callable[[ChatMessage, int], Awaitable[tuple[ChatMessage, int] | None]],
) -> list[ChatMessage] | None:
    """Rewrite tool results, oldest first, until the conversation fits ``target_tokens`` (see
    :func:`replace_tool_results_until_target`), awaiting ``replace`` one result at a time.

    :param replace: Gets a tool-result message and its index; returns its replacement and the tokens
        saved, or None. Awaited in order, so a result is offered only when the ones before it did not
        bring the conversation under the target.
    :returns: The new list, or None when nothing was replaced.
    """
    running_total = token_counter.count(messages)
    if running_total <= target_tokens:
        return None
    protected = protected_result_indices(messages, min_keep_steps)
    compacted = list(messages)
    changed = False
    for index, message in enumerate(messages):
        if message.tool_call_result is None or index in protected:
            continue
        replacement = await replace(message, index)
        if replacement is None:
            continue
        compacted[index], saved = replacement
        running_total -= saved
        changed = True
        if running_total <= target_tokens:
            break
    return compacted if changed else None
