"""Build v2 of the deploy tests' app (tests/support/deploy_builds/README.md): incompatible with v1."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

from core.state import State
from core.tools import tool
from hooks import hook

BUILD = "v2"


@tool
def ship(item: str) -> str:
    """Ship an item."""
    return f"{BUILD} shipped {item}"


@hook
async def before_llm_marker(state: State) -> None:
    """v2 waits a moment before each model call: a timer v1's histories do not have."""
    await workflow.sleep(timedelta(milliseconds=10))


TOOLS = [ship]
