"""The demo's two tools. Each records its side effect in a ledger file, keyed by the call's
idempotency key, so the demo (and the crash test) can show what ran how often."""

from __future__ import annotations

import asyncio
import json
import zlib
from pathlib import Path

from core.settings import get_settings
from core.tools import current_tool_context, tool


def ledger_path() -> Path:
    """``DEMO_LEDGER`` or ``.agent-dev/demo-ledger.jsonl``."""
    return Path(get_settings().demo_ledger)


def record_side_effect(tool_name: str, detail: str) -> None:
    """Append one line per executed side effect (after the work, as a real effect would land)."""
    context = current_tool_context()
    path = ledger_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(
            json.dumps(
                {"tool": tool_name, "key": context.idempotency_key, "attempt": context.attempt, "detail": detail}
            )
            + "\n"
        )


@tool
async def check_inventory(item: str) -> str:
    """Look up how many units of an item are in stock."""
    await asyncio.sleep(get_settings().demo_tool_seconds)
    stock = sum(ord(c) for c in item) % 50
    record_side_effect("check_inventory", item)
    return f"{stock} units of {item} in stock"


@tool
async def open_ticket(title: str, priority: str = "normal") -> str:
    """Open a support ticket and return its id."""
    await asyncio.sleep(get_settings().demo_tool_seconds)
    key = current_tool_context().idempotency_key
    record_side_effect("open_ticket", title)
    return f"ticket T-{zlib.crc32(key.encode()) % 10000:04d} opened ({priority}): {title}"


DEMO_TOOLS = [check_inventory, open_ticket]
