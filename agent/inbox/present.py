"""How the inbox shows things: times, expiry, the strategy that governs a tool, waiting rows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from agent.approvals.waiting import WaitingRuns

#: The hook whose strategies decide who confirms what.
CONFIRMATION_HOOK_TYPE = "hooks.human_in_the_loop.hooks.ConfirmationHook"


def when(value: datetime | None) -> str:
    """``2026-12-02 20:31:58 UTC`` (or an em dash for None)."""
    if value is None:
        return "—"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def relative(value: datetime | None, now: datetime | None = None) -> str:
    """``in 6d 23h``, ``3m ago``: the distance from ``now`` in its two largest units."""
    if value is None:
        return ""
    now = now or datetime.now(UTC)
    seconds = int((value - now).total_seconds())
    if abs(seconds) < 5:  # clocks of browser, inbox and server differ by a little
        return "just now"
    future, seconds = seconds >= 0, abs(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size or (unit == "s" and not parts):
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
        if len(parts) == 2:
            break
    text = " ".join(parts)
    return f"in {text}" if future else f"{text} ago"


def short_type(path: str | None) -> str:
    """``AlwaysAskPolicy`` from ``hooks.human_in_the_loop.policies.AlwaysAskPolicy``."""
    return (path or "?").rsplit(".", 1)[-1]


class StrategyView(BaseModel):
    """The confirmation strategy that governs one tool, as the call page shows it.

    :param key: The strategy's key in ``ConfirmationHook`` (a tool name, several, or ``*``).
    :param strategy: Its class name.
    :param policy: Its confirmation policy's class name.
    :param timeout: Its timeout, in words.
    :param on_timeout: What happens when it runs out.
    :param approvers: Who may decide (None: anyone).
    """

    key: str
    strategy: str
    policy: str
    timeout: str = ""
    on_timeout: str = ""
    approvers: list[str] | None = None


def _matches(key: Any, tool_name: str) -> bool:
    if isinstance(key, str):
        return key == tool_name or tool_name in [part.strip() for part in key.split(",")]
    return isinstance(key, list | tuple) and tool_name in key


def strategy_for(agent_spec: dict[str, Any] | None, tool_name: str) -> StrategyView | None:
    """The strategy of the run's ``ConfirmationHook`` that applies to ``tool_name`` (its own key
    first, then ``*``), from the agent spec in the run's input; None when none applies."""
    if not agent_spec:
        return None
    for hooks in (agent_spec.get("hooks") or {}).values():
        for hook in hooks or []:
            if not isinstance(hook, dict) or hook.get("type") != CONFIRMATION_HOOK_TYPE:
                continue
            params = hook.get("init_parameters") or {}
            strategies = params.get("confirmation_strategies") or {}
            found = next(((k, v) for k, v in strategies.items() if _matches(k, tool_name)), None)
            if found is None and "*" in strategies:
                found = ("*", strategies["*"])
            if found is None:
                continue
            key, strategy = found
            init = strategy.get("init_parameters") or {}
            timeout = init.get("timeout")
            approvers = init.get("approvers")
            hook_approvers = params.get("approvers")
            if isinstance(hook_approvers, dict) and tool_name in hook_approvers:
                approvers = hook_approvers[tool_name]
            return StrategyView(
                key=str(key),
                strategy=short_type(strategy.get("type")),
                policy=short_type((init.get("confirmation_policy") or {}).get("type")),
                timeout=duration(timeout) if isinstance(timeout, int | float) else "",
                on_timeout=str(init.get("on_timeout") or ""),
                approvers=list(approvers) if isinstance(approvers, list) else None,
            )
    return None


def duration(seconds: float) -> str:
    """``7d``, ``1h 30m``, ``45s``."""
    seconds = int(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return " ".join(parts[:2]) or "0s"


class WaitingRow(BaseModel):
    """One waiting call in the list."""

    run_id: str
    tool_call_id: str
    tool_name: str
    arguments_preview: str
    requested_at: datetime
    expires_at: datetime | None = None
    on_timeout: str = "reject"
    #: The run this one is a sub-agent of (``Agent.as_tool``), when it is one.
    parent_run_id: str | None = None


def waiting_rows(waiting: WaitingRuns, tool: str = "", run: str = "") -> list[WaitingRow]:
    """The waiting calls, oldest request first, keeping those whose tool is ``tool`` (when given)
    and whose run id contains ``run`` (when given)."""
    rows = [
        WaitingRow(run_id=w.run_id, **summary.model_dump(include=set(WaitingRow.model_fields) - {"run_id"}))
        for w in waiting.runs
        for summary in w.pending
    ]
    if tool:
        rows = [row for row in rows if row.tool_name == tool]
    if run:
        rows = [row for row in rows if run in row.run_id]
    rows.sort(key=lambda row: row.requested_at)
    return rows


def pretty_json(value: Any) -> str:
    """Indented JSON with sorted keys (non-ASCII kept)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
