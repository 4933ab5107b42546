"""What a hook family declares beyond its hooks, and the registry of families.

A family is one folder under ``hooks/`` (``budget/``, ``compaction/``, ...). Its ``__init__``
exports ``FAMILY``, a :class:`HookFamily` naming what the rest of the system must provide for
its hooks to work: activities for the worker, workflow message handlers and a warm-up for the
worker process. ``AgentPlugin`` collects the activities and warm-ups, ``AgentWorkflow`` inherits
the handlers; none of them names a family. A family's people side (CLI commands, inbox pages,
client helpers) lives in the facade, under ``agent/`` (e.g. ``agent/approvals/``).

Adding a family is its folder plus one entry in :data:`FAMILY_PACKAGES`.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from temporalio.client import Client

#: The families, by package. The one line to touch when adding a family.
FAMILY_PACKAGES = (
    "hooks.budget",
    "hooks.compaction",
    "hooks.human_in_the_loop",
    "hooks.tool_result_offloading",
    "hooks.audit",
)


@dataclass(frozen=True)
class HookFamily:
    """A family's needs beyond its hooks.

    :param name: The family's name (its folder).
    :param activities: Activity callables the worker must register (``@activity.defn``).
    :param workflow_handlers: Mixin classes with ``@workflow.signal``/``update``/``query`` methods;
        ``AgentWorkflow`` inherits them. A mixin reads the run through ``self._context``
        (a ``RunContext``, or None before the run starts).
    :param warm_up: Called once per worker process before it polls (e.g. load an encoding from
        local files, check that a bucket exists). May raise to refuse to start, with a message
        that says how to fix the configuration.
    :param check: ``async (client) -> None``, awaited when a worker starts, before it polls: checks
        the server or store set-up the family relies on (a search attribute, a bucket) and raises
        ``core.checks.ConfigurationError`` saying how to fix it, so nothing fails later, mid-run.
    """

    name: str
    activities: Sequence[Callable[..., Any]] = ()
    workflow_handlers: Sequence[type] = ()
    warm_up: Callable[[], None] | None = None
    check: Callable[[Client], Awaitable[None]] | None = None


def families() -> list[HookFamily]:
    """Every registered family's declaration, in :data:`FAMILY_PACKAGES` order."""
    return [importlib.import_module(package).FAMILY for package in FAMILY_PACKAGES]


def family_activities() -> list[Callable[..., Any]]:
    """The activities of every family."""
    return [activity for family in families() for activity in family.activities]


def family_workflow_handlers() -> tuple[type, ...]:
    """The workflow handler mixins of every family."""
    return tuple(handler for family in families() for handler in family.workflow_handlers)


def warm_up_families() -> None:
    """Run every family's worker warm-up."""
    for family in families():
        if family.warm_up is not None:
            family.warm_up()


async def check_families(client: Client) -> None:
    """Await every family's configuration check.

    :raises core.checks.ConfigurationError: From the first check that fails.
    """
    for family in families():
        if family.check is not None:
            await family.check(client)
