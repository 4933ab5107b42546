"""What bench.peers' parent and worker processes share: the task, one run's result, and the table.

Pure code (no Temporal, no peer libraries), so the unit tests import it without the ``[bench]`` extra.
"""

from __future__ import annotations

import statistics
from typing import Literal

from pydantic import BaseModel

#: The systems, in table order. The bare floor (bench/bare_floor.py) comes first: the others'
#: work is divided by it; "floor" is our activities in a loop with no agent logic.
SYSTEMS = ("bare", "floor", "ours", "pydantic-ai", "openai-agents")
#: The tool every system offers; the scripted model calls it once a step.
TOOL_NAME = "big_text"
PROMPT = "Call big_text as often as you are scripted to, then answer."


def script(steps: int, result_bytes: int) -> list[dict]:
    """The scripted model's replies: ``steps`` calls of the tool (one a step), then a text answer.

    :param steps: Tool-calling steps before the answer; at least 1.
    :param result_bytes: The size of text each tool call returns; at least 1.
    :raises ValueError: On a value below 1.
    """
    if steps < 1 or result_bytes < 1:
        raise ValueError(f"steps and result_bytes must be at least 1, got steps={steps}, result_bytes={result_bytes}.")
    call = {"tool_calls": [{"name": TOOL_NAME, "arguments": {"size": result_bytes}}], "times": steps}
    return [call, {"text": "done"}]


class PeerResult(BaseModel):
    """One system's run of one case, as the worker process reports it (one JSON line).

    ``steps_done`` counts completed tool activities. The per-step figures divide by it; wall and
    CPU are ``None`` for a run that did not finish (its CPU includes the retries of a stall).
    """

    system: str
    steps: int
    result_bytes: int
    outcome: Literal["finished", "stalled", "failed"]
    error: str | None = None
    steps_done: int = 0
    wall_ms: float | None = None
    work_ms: float | None = None
    cpu_ms: float | None = None
    history_bytes: float | None = None
    #: Rounds this result stands for (:func:`median_results`), and how many of them finished.
    rounds: int = 1
    rounds_finished: int = 1
    #: Slowest and fastest finished round's wall ms/step, when there were several.
    wall_range: tuple[float, float] | None = None

    @property
    def status(self) -> str:
        """``finished``, ``finished 2/3 rounds: <the other's status>``, or ``stalled: <error>`` /
        ``failed: <error>`` with the step it reached."""
        if self.outcome == "finished":
            if self.rounds_finished < self.rounds:
                return f"finished {self.rounds_finished}/{self.rounds} rounds; {self.error}"
            return "finished"
        return f"{self.outcome} at step {self.steps_done}/{self.steps}: {self.error or 'no error recorded'}"


def median_results(results: list[PeerResult]) -> list[PeerResult]:
    """One result per system and case from several rounds: the medians of the finished rounds.

    A round that did not finish is counted and its status kept in ``error`` (a system none of
    whose rounds finished keeps its last round's result), so a crash or a stall is never dropped
    silently. Order: as first seen.
    """
    groups: dict[tuple[str, int, int], list[PeerResult]] = {}
    for r in results:
        groups.setdefault((r.system, r.steps, r.result_bytes), []).append(r)
    merged = []
    for group in groups.values():
        finished = [r for r in group if r.outcome == "finished"]
        others = [r for r in group if r.outcome != "finished"]
        if not finished:
            merged.append(group[-1].model_copy(update={"rounds": len(group), "rounds_finished": 0}))
            continue

        def median(field: str, rounds: list[PeerResult] = finished) -> float | None:
            values = [getattr(r, field) for r in rounds if getattr(r, field) is not None]
            return statistics.median(values) if values else None

        walls = [r.wall_ms for r in finished if r.wall_ms is not None]
        merged.append(
            finished[0].model_copy(
                update={
                    "wall_ms": median("wall_ms"),
                    "work_ms": median("work_ms"),
                    "cpu_ms": median("cpu_ms"),
                    "history_bytes": median("history_bytes"),
                    "steps_done": int(statistics.median(r.steps_done for r in finished)),
                    "rounds": len(group),
                    "rounds_finished": len(finished),
                    "wall_range": (min(walls), max(walls)) if len(walls) > 1 else None,
                    "error": "; ".join(r.status for r in others) or None,
                }
            )
        )
    return merged


def best_peer_lines(
    results: list[PeerResult], ours: str = "ours", peers: tuple[str, ...] = ("pydantic-ai", "openai-agents")
) -> list[str]:
    """Per case, our wall per step against the fastest peer's and the bare floor's, e.g.
    ``20 × 2 KiB: ours 66.1 ms/step = 0.79× openai-agents (83.5), 0.99× bare (66.8)``; a case
    without our or any peer's finished run says which is missing."""
    lines = []
    cases = list(dict.fromkeys((r.steps, r.result_bytes) for r in results))
    for steps, size in cases:
        group = {r.system: r for r in results if (r.steps, r.result_bytes) == (steps, size)}
        label = f"{steps} × {size_label(size)}"
        mine = group.get(ours)
        rivals = [group[p] for p in peers if p in group and group[p].wall_ms]
        if mine is None or not mine.wall_ms or not rivals:
            lines.append(f"{label}: no comparison (ours or every peer did not finish)")
            continue
        best = min(rivals, key=lambda r: r.wall_ms)
        text = f"{label}: {ours} {mine.wall_ms:.1f} ms/step = {mine.wall_ms / best.wall_ms:.2f}× {best.system} ({best.wall_ms:.1f})"
        bare = group.get(SYSTEMS[0])
        if bare is not None and bare.wall_ms:
            text += f", {mine.wall_ms / bare.wall_ms:.2f}× bare ({bare.wall_ms:.1f})"
        lines.append(text)
    return lines


def classify(
    *, completed: bool, failure: str | None, elapsed_s: float, idle_s: float, deadline_s: float, stall_s: float
):
    """Decide what a run still in flight is: ``None`` (keep waiting) or an outcome and its error.

    :param completed: The workflow closed successfully.
    :param failure: The workflow closed unsuccessfully, with this message (failed, terminated, timed out).
    :param elapsed_s: Seconds since the run started.
    :param idle_s: Seconds since its history last grew.
    :param deadline_s: Longest a run may take in all.
    :param stall_s: Longest a run may go without a new history event.
    :returns: ``None``, or ``(outcome, error)`` with outcome ``finished``, ``failed`` or ``stalled``.
    """
    if completed:
        return "finished", None
    if failure is not None:
        return "failed", failure
    if idle_s > stall_s:
        return "stalled", f"no new history event for {idle_s:.0f} s"
    if elapsed_s > deadline_s:
        return "stalled", f"not finished within the {deadline_s:.0f} s deadline"
    return None


def size_label(result_bytes: int) -> str:
    """``2048`` -> ``"2 KiB"``, ``51200`` -> ``"50 KiB"``, ``2000`` -> ``"2,000 B"``."""
    return f"{result_bytes // 1024} KiB" if result_bytes % 1024 == 0 else f"{result_bytes:,} B"


def _num(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def markdown_table(results: list[PeerResult], *, error_chars: int = 90) -> str:
    """The docs' table: one row per case and system, ratios against the same case's bare floor
    (medians over rounds when given :func:`median_results`; "wall range" is the rounds' spread).

    :param results: Every run, any order; rows come out by case (as first seen) then :data:`SYSTEMS`.
    :param error_chars: Longest error text kept in a cell (the rest becomes ``…``).
    """
    header = (
        "| steps × result | system | finished | wall ms/step | wall range | wall / bare | worker work ms/step "
        "| work / bare | worker CPU ms/step | history KB/step |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    cases = list(dict.fromkeys((r.steps, r.result_bytes) for r in results))
    order = {name: i for i, name in enumerate(SYSTEMS)}
    rows = [header]
    for steps, size in cases:
        group = sorted(
            (r for r in results if (r.steps, r.result_bytes) == (steps, size)),
            key=lambda r: order.get(r.system, len(order)),
        )
        bare = next((r for r in group if r.system == SYSTEMS[0] and r.work_ms), None)
        for r in group:
            ratio = f"{r.work_ms / bare.work_ms:.2f}×" if (bare and r.work_ms is not None) else "–"
            wall_ratio = f"{r.wall_ms / bare.wall_ms:.2f}×" if (bare and bare.wall_ms and r.wall_ms) else "–"
            status = r.status.replace("|", "/")
            if len(status) > error_chars:
                status = status[: error_chars - 1] + "…"
            history_kb = None if r.history_bytes is None else r.history_bytes / 1024
            spread = "–" if r.wall_range is None else f"{r.wall_range[0]:.1f}–{r.wall_range[1]:.1f}"
            rows.append(
                f"| {steps} × {size_label(size)} | {r.system} | {status} | {_num(r.wall_ms)} | {spread} | {wall_ratio} "
                f"| {_num(r.work_ms)} | {ratio} | {_num(r.cpu_ms)} | {_num(history_kb)} |"
            )
    return "\n".join(rows)
