"""What the live tests (CLI and inbox) script the model with: an answer streamed slowly enough
that a subscriber sees its first words long before the model call ends."""

from __future__ import annotations

from typing import Any

#: The answer the slow model streams.
ANSWER = "The deploy of checkout finished: 3 of 3 replicas up, no errors in the last 10 minutes."


def slowly(text: str) -> dict[str, Any]:
    """A script entry that streams ``text`` a few characters at a time over about 5 s."""
    return {"text": text, "stream": {"chunk_chars": 4, "delay_seconds": 0.25}}
