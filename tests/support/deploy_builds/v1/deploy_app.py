"""Build v1 of the deploy tests' app (tests/support/deploy_builds/README.md)."""

from __future__ import annotations

from core.state import State
from core.tools import tool
from hooks import hook

BUILD = "v1"


@tool
def ship(item: str) -> str:
    """Ship an item."""
    return f"{BUILD} shipped {item}"


@hook
async def before_llm_marker(state: State) -> None:
    """v1 does nothing before a model call."""


TOOLS = [ship]
