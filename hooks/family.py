"""What a hook family declares beyond its hooks, and the registry of families.

A family is one folder under ``hooks/`` (``budget/``, ``compaction/``, ...). Its ``__init__``
exports ``FAMILY``, a :class:`HookFamily` naming what the rest of the system must provide for
its hooks to work: activities for the worker, workflow message handlers and a warm-up for the
worker process. ``AgentPlugin`` collects the activities and warm-ups, ``AgentWorkflow`` has each
family register its handlers when a run starts; none of them names a family. A family's people
side (CLI commands, inbox pages, client helpers) lives in the facade, under ``agent/`` (e.g.
``agent/approvals/``).

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
    :param register_handlers: ``() -> None``, called by ``AgentWorkflow`` at the start of every
        workflow run, before its first await: registers the family's Signal, Update and Query
        handlers (``workflow.set_signal_handler``/``set_update_handler``/``set_query_handler``).
        Handlers read the run through ``hooks.context.current_run_or_none`` (None before the run
        has its context).
    :param warm_up: Called once per worker process before it polls (e.g. load an encoding from
        local files, check that a bucket exists). May raise to refuse to start, with a message
        that says how to fix the configuration.
    :param check: ``async (client) -> None``, awaited when a worker starts, before it polls: checks
        the server or store set-up the family relies on (a search attribute, a bucket) and raises
        ``core.checks.ConfigurationError`` saying how to fix it, so nothing fails later, mid-run.
    """

    name: str
    activities: Sequence[Callable[..., Any]] = ()
    register_handlers: Callable[[], None] | None = None
    warm_up: Callable[[], None] | None = None
    check: Callable[[Client], Awaitable[None]] | None = None


def families() -> list[HookFamily]:
    """Every registered family's declaration, in :data:`FAMILY_PACKAGES` order."""
    return [importlib.import_module(package).FAMILY for package in FAMILY_PACKAGES]


def family_activities() -> list[Callable[..., Any]]:
    """The activities of every family."""
    return [activity for family in families() for activity in family.activities]


def register_family_handlers() -> None:
    """Register every family's workflow handlers for the run that is starting."""
    for family in families():
        if family.register_handlers is not None:
            family.register_handlers()


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
