"""What the live tests (CLI and inbox) script the model with: an answer streamed slowly enough
that a subscriber sees its first words long before the model call ends."""

from __future__ import annotations

from typing import Any

#: The answer the slow model streams.
ANSWER = "The deploy of checkout finished: 3 of 3 replicas up, no errors in the last 10 minutes."


def slowly(text: str, **extra: Any) -> dict[str, Any]:
    """A script entry that streams ``text`` 4 characters a chunk, a chunk every 0.2 s (about 4.5 s
    for :data:`ANSWER`); ``extra`` adds keys (e.g. ``break_after``)."""
    return {"text": text, "chunk_chars": 4, "pace": 0.2, **extra}
