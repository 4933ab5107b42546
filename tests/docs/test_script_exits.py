"""The scripts the docs give a reader to run leave without temporalio's shutdown abort
(``Fatal Python error: PyGILState_Release``, exit 134, sdk-python#300): each Python block that
connects to Temporal and ends in ``asyncio.run(...)`` then flushes and leaves with ``os._exit``, as the
agent CLI does."""

from __future__ import annotations

from tests.docs.markdown_blocks import blocks
from tests.docs.test_code_blocks import DOC_FILES


def test_every_script_that_connects_leaves_with_os_exit() -> None:
    problems = []
    for path in DOC_FILES:
        for block in blocks(path):
            if block.kind not in ("python", "not run") or "connect(" not in block.source:
                continue
            lines = [line for line in block.source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
            run_at = next((i for i, line in enumerate(lines) if line.startswith("asyncio.run(")), None)
            if run_at is None:
                continue  # top-level await: pasted into `python -m asyncio`, not a script
            if not any(line.startswith("os._exit(") for line in lines[run_at + 1 :]):
                problems.append(f"{block.where}: after asyncio.run(...), flush and leave with os._exit(0)")
    assert not problems, "\n".join(problems)
