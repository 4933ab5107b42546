"""Token counters: how compaction measures a conversation (Haystack's ``TokenCounter`` idea).

A counter measures the conversation's rendered text (see :mod:`hooks.compaction.rendering`), so
two counters differ only in how they turn text into a number. Both here are pure and
deterministic, which is what workflow code needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from core.messages import ChatMessage
from core.serialization import default_from_dict, default_to_dict
from core.tools import ToolSpec
from hooks.compaction.encodings import OFFLINE_ENCODINGS, load_encoding
from hooks.compaction.rendering import render_conversation, render_tools

Tools = Sequence[ToolSpec | dict[str, Any]]


@runtime_checkable
class TokenCounter(Protocol):
    """Estimates how many tokens messages (and tool schemas) take in a model's context.

    Implementations must be deterministic (they run as workflow code) and serialisable.
    """

    def count(self, messages: Sequence[ChatMessage], tools: Tools | None = None) -> int:
        """Tokens taken by ``messages``, plus ``tools``' schemas when given; ``0`` for nothing."""
        ...

    def count_text(self, text: str) -> int:
        """Tokens taken by a plain text."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Serialise to ``{"type": ..., "init_parameters": {...}}``."""
        ...


def _text_of(messages: Sequence[ChatMessage], tools: Tools | None) -> str:
    return render_conversation(messages) + render_tools(tools)


class ApproximateTokenCounter:
    """Estimates tokens from text length at a flat number of characters per token.

    Needs nothing loaded and costs almost nothing; off by up to tens of percent on real text.
    Haystack's constructor and ``to_dict``: ``tokens_per_image`` and ``tokens_per_file`` are what
    Haystack charges for an image or a file in a message. Messages here carry text only, so they
    are kept (and serialised) for code and dicts written for Haystack but never change a count.

    :param chars_per_token: How many characters count as one token.
    :param tokens_per_image: Tokens an image would be charged (Haystack's default, 85).
    :param tokens_per_file: Tokens a file would be charged (Haystack's default, 1000).
    :raises ValueError: If ``chars_per_token`` is not positive.
    """

    def __init__(self, chars_per_token: float = 4.0, tokens_per_image: int = 85, tokens_per_file: int = 1000) -> None:
        if chars_per_token <= 0:
            raise ValueError(f"`chars_per_token` must be greater than 0, got {chars_per_token}.")
        self.chars_per_token = chars_per_token
        self.tokens_per_image = tokens_per_image
        self.tokens_per_file = tokens_per_file

    def count(self, messages: Sequence[ChatMessage], tools: Tools | None = None) -> int:
        """Estimated tokens of the rendered messages and tool schemas."""
        if not messages and not tools:
            return 0
        return self.count_text(_text_of(messages, tools))

    def count_text(self, text: str) -> int:
        """``len(text) / chars_per_token``, rounded down."""
        return int(len(text) / self.chars_per_token)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the counter (Haystack's three keys)."""
        return default_to_dict(
            self,
            chars_per_token=self.chars_per_token,
            tokens_per_image=self.tokens_per_image,
            tokens_per_file=self.tokens_per_file,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ApproximateTokenCounter:
        """Rebuild the counter from :meth:`to_dict`'s output (a dict with only ``chars_per_token`` too)."""
        return default_from_dict(cls, data)

    def __repr__(self) -> str:
        return (
            f"ApproximateTokenCounter(chars_per_token={self.chars_per_token}, "
            f"tokens_per_image={self.tokens_per_image}, tokens_per_file={self.tokens_per_file})"
        )


class TiktokenTokenCounter:
    """Counts tokens with tiktoken, OpenAI's byte-pair encoder, with no network.

    The encoding is built from local files (see :mod:`hooks.compaction.encodings`) on first use and
    shared by every counter of the process. Special-token strings such as ``<|endoftext|>`` are
    counted as ordinary text, so any tool output can be measured. Other providers tokenise
    differently, so on their models the count is an estimate.

    :param encoding: ``"o200k_base"`` (current OpenAI models) or ``"cl100k_base"``.
    :raises ValueError: If the encoding has no local copy.
    """

    def __init__(self, encoding: str = "o200k_base") -> None:
        if encoding not in OFFLINE_ENCODINGS:
            raise ValueError(f"`encoding` must be one of {', '.join(OFFLINE_ENCODINGS)}, got '{encoding}'.")
        self.encoding = encoding

    def warm_up(self) -> None:
        """Load the encoding into the process cache if it is not there yet.

        ``CompactionHook.warm_up`` calls it when a run starts, so a run's first count never pays for
        the load. The encoding is loaded here, once per process, in the first workflow task of a
        run that uses it (0.7-1.7 s), unless the worker preloaded it before polling
        (``AGENT_PRELOAD_ENCODINGS``, see :mod:`hooks.compaction.encodings`).
        """
        load_encoding(self.encoding)

    def count(self, messages: Sequence[ChatMessage], tools: Tools | None = None) -> int:
        """Tokens of the rendered messages and tool schemas."""
        if not messages and not tools:
            return 0
        return self.count_text(_text_of(messages, tools))

    def count_text(self, text: str) -> int:
        """Tokens of ``text``."""
        return len(load_encoding(self.encoding).encode_ordinary(text))

    def to_dict(self) -> dict[str, Any]:
        """Serialise the counter."""
        return default_to_dict(self, encoding=self.encoding)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TiktokenTokenCounter:
        """Rebuild the counter from :meth:`to_dict`'s output."""
        return default_from_dict(cls, data)

    def __repr__(self) -> str:
        return f"TiktokenTokenCounter(encoding={self.encoding!r})"


class TiktokenCounter(TiktokenTokenCounter):
    """Haystack's name and constructor for :class:`TiktokenTokenCounter`; counts exactly as it does.

    ``tokens_per_image`` and ``tokens_per_file`` are what Haystack charges for an image or a file
    in a message, which a tokenizer cannot measure. Messages here carry text only, so they are
    kept (and serialised) for code written against Haystack but never change a count.

    :param encoding: ``"o200k_base"`` (current OpenAI models) or ``"cl100k_base"``.
    :param tokens_per_image: Tokens an image would be charged (Haystack's default, 85).
    :param tokens_per_file: Tokens a file would be charged (Haystack's default, 1000).
    :raises ValueError: If the encoding has no local copy, or a per-item charge is not a non-negative integer.
    """

    def __init__(self, encoding: str = "o200k_base", tokens_per_image: int = 85, tokens_per_file: int = 1000) -> None:
        super().__init__(encoding)
        for name, value in (("tokens_per_image", tokens_per_image), ("tokens_per_file", tokens_per_file)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"`{name}` must be a non-negative integer, got {value!r}.")
        self.tokens_per_image = tokens_per_image
        self.tokens_per_file = tokens_per_file

    def to_dict(self) -> dict[str, Any]:
        """Serialise the counter."""
        return default_to_dict(
            self, encoding=self.encoding, tokens_per_image=self.tokens_per_image, tokens_per_file=self.tokens_per_file
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TiktokenCounter:
        """Rebuild the counter from :meth:`to_dict`'s output."""
        return default_from_dict(cls, data)

    def __repr__(self) -> str:
        return (
            f"TiktokenCounter(encoding={self.encoding!r}, tokens_per_image={self.tokens_per_image}, "
            f"tokens_per_file={self.tokens_per_file})"
        )
