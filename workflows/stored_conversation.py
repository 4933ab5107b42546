"""Which prefix of the conversation the worker already stores (deterministic workflow code).

After each model call the activity may return a ``conversation_head``: the digest of the
stored conversation up to the messages it was sent (or, from older workers, up to and including
the reply, ``conversation_covers_reply``). The next call then sends only the
messages after the longest stored prefix that hooks left untouched; a hook that rewrites
earlier messages (compaction, a confirmation that edits a call) just moves that point back.
"""

from __future__ import annotations

from core.messages import ChatMessage


def common_prefix_length(a: list[ChatMessage], b: list[ChatMessage]) -> int:
    """How many leading messages ``a`` and ``b`` share (identity first: it is the usual case)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x is not y and x != y:
            break
        n += 1
    return n


class StoredConversation:
    """The stored prefixes of one run's conversation, as ``(message count, head)`` boundaries."""

    def __init__(self, covered: list[ChatMessage] | None = None, boundary: tuple[int, str] | None = None) -> None:
        self._covered: list[ChatMessage] = list(covered or [])
        self._boundaries: list[tuple[int, str]] = [boundary] if boundary else []

    def request(self, messages: list[ChatMessage]) -> tuple[str | None, list[ChatMessage]]:
        """``(head, tail)``: the stored prefix to refer to, and the messages to send after it."""
        if not self._boundaries:
            return None, messages
        shared = common_prefix_length(self._covered, messages)
        while self._boundaries and self._boundaries[-1][0] > shared:
            self._boundaries.pop()
        if not self._boundaries:
            return None, messages
        count, head = self._boundaries[-1]
        return head, messages[count:]

    def record(self, sent: list[ChatMessage], reply: ChatMessage, head: str | None, covers_reply: bool = True) -> None:
        """After a model call over ``sent``: the worker stored ``sent`` (and ``reply`` when
        ``covers_reply``) as ``head``."""
        if head is None:
            self._boundaries.clear()
            return
        self._covered = [*sent, reply] if covers_reply else list(sent)
        self._boundaries.append((len(self._covered), head))
