"""``read_tool_result``: the tool an agent is given to page through offloaded results."""

from __future__ import annotations

from core.tools import current_tool_context, tool
from hooks.tool_result_offloading.stores import store_from_environment

#: Most characters one call returns; ask for the next range to read on.
READ_LIMIT_CHARS = 20_000


def select_range(
    content: str,
    start: int | None = None,
    end: int | None = None,
    start_line: int | None = None,
    end_line: int | None = None,
    limit: int = READ_LIMIT_CHARS,
) -> str:
    """The requested part of ``content``, at most ``limit`` characters, with a note when cut.

    :raises ValueError: If character and line ranges are mixed, or a bound is negative or out of order.
    """
    chars = start is not None or end is not None
    lines = start_line is not None or end_line is not None
    if chars and lines:
        raise ValueError("Give a character range (start, end) or a line range (start_line, end_line), not both.")
    for name, value in (("start", start), ("end", end)):
        if value is not None and value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}.")
    for name, value in (("start_line", start_line), ("end_line", end_line)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be >= 1 (lines are numbered from 1), got {value}.")
    if lines:
        all_lines = content.splitlines(keepends=True)
        first, last = (start_line or 1), (end_line or len(all_lines))
        if last < first:
            raise ValueError(f"end_line ({last}) is before start_line ({first}).")
        offset = sum(len(line) for line in all_lines[: first - 1])
        part = "".join(all_lines[first - 1 : last])
        total = f"{len(all_lines)} lines"
    else:
        first, last = (start or 0), (len(content) if end is None else end)
        if last < first:
            raise ValueError(f"end ({last}) is before start ({first}).")
        offset, part = first, content[first:last]
        total = f"{len(content)} characters"
    if len(part) <= limit:
        return part
    return (
        part[:limit] + f"\n[cut at {limit} characters; the result has {total}. Continue with start={offset + limit}.]"
    )


#: What the model reads about the tool (the docstring below is for developers).
READ_TOOL_DESCRIPTION = (
    "Read back a tool result that was offloaded (its message says 'Tool result offloaded ... at <reference>'). "
    "Pass the reference; optionally a character range (start inclusive, end exclusive, from 0) or a line range "
    f"(start_line, end_line inclusive, from 1). At most {READ_LIMIT_CHARS} characters come back per call; "
    "page through longer results with start/end."
)


@tool(description=READ_TOOL_DESCRIPTION)
def read_tool_result(
    reference: str,
    start: int | None = None,
    end: int | None = None,
    start_line: int | None = None,
    end_line: int | None = None,
) -> str:
    """Read back a tool result that was offloaded to the result store, whole or in parts.

    Give the reference from the offloaded message. Optionally give a character range
    (start inclusive, end exclusive, from 0) or a line range (start_line and end_line
    inclusive, from 1). At most 20000 characters come back per call; page with start/end.

    The store is the worker's: TOOL_RESULTS_BUCKET set means S3ToolResultStore(bucket,
    prefix TOOL_RESULTS_PREFIX or "tool-results"), otherwise FileSystemToolResultStore rooted
    at TOOL_RESULTS_DIR (default .agent-dev/tool-results). It is scoped to the calling run
    (run id from the tool context), so references of other runs are refused.
    """
    store = store_from_environment().for_run(current_tool_context().run_id)
    return select_range(store.read(reference), start=start, end=end, start_line=start_line, end_line=end_line)
