"""Where the worker's time goes: py-spy samples of the worker process, split into the parts of a step.

``bench.throughput --profile DIR`` records the worker with ``py-spy record --format raw`` while
one batch of each kind runs, then prints, per kind, the sampled Python time per step by part.
py-spy is a separate tool (``pip install py-spy``); it samples Python stacks only, so the SDK's
Rust core shows in the CPU figures but not here. Samples where a thread waits (an idle pool
thread, the event loop's ``select``, a socket read) are left out. py-spy pauses the worker for each
sample, so the profiled batches run apart from the measured rounds, and on a loaded machine a
paused worker can miss a heartbeat and retry a call (the batch then prints a note).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

#: py-spy's sampling rate (Hz).
RATE = 250

#: Leaf frames of a waiting thread.
_IDLE = (
    "_worker (concurrent/futures/thread.py",
    "EpollSelector.select",
    "do_poll",
    "SocketIO.readinto",
)

#: (part, frame substrings): a sample counts for the first part one of whose frames is on its
#: stack, so the specific parts come first (the converter's time counts as the converter's on
#: either side; heartbeats are the SDK's heartbeat and our timer, not the calls they wrap).
PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("data converter (payloads <-> pydantic, both sides)", ("temporalio/converter",)),
    ("workflow: new sandbox + workflow module import (per run)", ("_WorkflowWorker._create_workflow_instance",)),
    ("workflow: activation in the sandbox (run loop, hooks, State)", ("_Instance._run_code",)),
    ("workflow: payload codec visits", ("PayloadVisitor.visit",)),
    ("workflow: other activation handling", ("_WorkflowWorker._handle_activation",)),
    ("bare floor: its two activities (httpx, JSON, the tool)", ("BareActivities",)),
    ("model: message conversion to the wire form", ("to_openai_messages", "to_openai_tools", "_wire_of")),
    ("model: response parsing (to our message)", ("_parse_completion", "LegacyAPIResponse.parse")),
    ("model: openai SDK request (build, send, read)", ("AsyncAPIClient",)),
    ("model: S3 conversation segment (write, read)", ("ConversationStore",)),
    ("heartbeats", ("_ActivityWorker._heartbeat", "heartbeat (", "beat (")),
    ("tool: context (ToolContext, contextvar)", ("ToolContext", "tool_context_set")),
    ("tool: argument validation", ("validate_arguments",)),
    ("tool: the function (and its thread hop)", ("Tool.invoke", "big_text (")),
    ("model activity: the rest", ("ModelActivities.chat_completion",)),
    ("tool activity: the rest", ("ToolActivities",)),
    ("activity: SDK (start, complete)", ("_ActivityWorker",)),
    ("SDK bridge (poll, complete)", ("temporalio/bridge/worker.py",)),
)


@contextlib.contextmanager
def recording(pid: int, out: Path) -> Iterator[None]:
    """Sample ``pid`` with py-spy into ``out`` (raw collapsed stacks) while the block runs.

    :raises FileNotFoundError: If py-spy is not installed.
    """
    # The venv's bin first: py-spy installs its binary beside the interpreter.
    exe = shutil.which("py-spy", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if exe is None:
        raise FileNotFoundError("--profile needs py-spy: pip install py-spy")
    spy = subprocess.Popen(
        [exe, "record", "-p", str(pid), "-r", str(RATE), "-f", "raw", "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        spy.wait(timeout=60)


def split(path: Path) -> Counter[str]:
    """Busy samples per part of a py-spy raw file (``other`` for the rest)."""
    parts: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        leaf = stack.rsplit(";", 1)[-1]
        if not leaf or leaf.startswith(_IDLE):
            continue
        part = next((name for name, frames in PARTS if any(frame in stack for frame in frames)), "other")
        parts[part] += int(count)
    return parts


def print_split(files: dict[str, Path], steps: dict[str, int]) -> None:
    """Print the split per kind as sampled ms per step.

    :param files: Kind -> its py-spy raw file.
    :param steps: Kind -> the steps its sampled runs took.
    """
    splits = {kind: split(path) for kind, path in files.items()}
    kinds = list(files)
    print(f"worker Python time per step by part (py-spy, {RATE} Hz, busy samples only; ms per step)")
    print(f"{'':62}" + "".join(f"{k:>10}" for k in kinds))
    for name in [p for p, _ in PARTS] + ["other"]:
        if any(splits[k][name] for k in kinds):
            print(f"{name:62}" + "".join(f"{splits[k][name] * 1000 / RATE / steps[k]:>10.2f}" for k in kinds))
    print(f"{'total':62}" + "".join(f"{sum(splits[k].values()) * 1000 / RATE / steps[k]:>10.2f}" for k in kinds))
