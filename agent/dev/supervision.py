"""``agent dev`` keeps an eye on its children: a worker, Temporal server or S3 server that exits by
itself is said on the console at once, with its last log lines and what to do, and ``agent dev``
keeps running (the reloading worker starts again at the next change of a watched file).

A child stopped on purpose (:meth:`ChildProcess.stop`, a reload) is forgotten by its
:class:`~agent.dev.processes.ChildProcess`, so only deaths are reported, each once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from agent.dev.processes import ChildProcess

#: Seconds between two looks at the children (a death is said within this).
CHECK_SECONDS = 0.5
#: Log lines shown with a death.
LAST_LINES = 8


@dataclass(frozen=True)
class Watched:
    """A child ``agent dev`` watches.

    :param name: How the console names it ("the worker", "the Temporal server").
    :param process: The child.
    :param next_step: What brings it back, one sentence.
    """

    name: str
    process: ChildProcess
    next_step: str


def death_report(child: Watched, pid: int, code: int) -> str:
    """The lines that say ``child`` (``pid``) exited with ``code``: its last log lines and the next step."""
    how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    lines = [f"agent dev: {child.name} (pid {pid}) {how}. Its last lines ({child.process.log_file}):"]
    lines += [f"  | {line}" for line in child.process.last_lines(LAST_LINES)] or ["  | (nothing)"]
    lines.append(f"agent dev: {child.next_step} agent dev keeps running.")
    return "\n".join(lines)


async def watch_children(
    children: Callable[[], list[Watched]], report: Callable[[str], None], interval: float = CHECK_SECONDS
) -> None:
    """Report each child of ``children()`` that exits by itself, once per process, until cancelled.

    :param children: The children to look at now (asked each time: a reload makes a new worker).
    :param report: Called with the lines of each death (:func:`death_report`).
    """
    reported: set[tuple[str, int]] = set()
    while True:
        for child in children():
            died = child.process.died()
            if died is not None and (child.name, died[0]) not in reported:
                reported.add((child.name, died[0]))
                report(death_report(child, *died))
        await asyncio.sleep(interval)
