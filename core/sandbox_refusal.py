"""What to tell a user whose hook module Temporal's workflow sandbox refused to import.

Hooks run as workflow code, so the worker imports their modules inside the sandbox, which refuses
non-deterministic access (``os.path``, sockets, clocks) at import time. A module that imports an
HTTP or model client at its top (a Haystack Chat Generator, ``openai``) is refused there although
it is installed. ``Agent(...)`` checks this in advance (``runtime/sandbox.py``) and the run loop
reports it when a worker meets it; both say the same thing, made here.
"""

from __future__ import annotations

from types import TracebackType

from temporalio.worker.workflow_sandbox import RestrictedWorkflowAccessError

#: What to do about it, the same wherever the refusal is reported.
REMEDY = (
    "Hooks run as workflow code: keep clients (HTTP, model SDKs) out of hook modules - use the durable "
    "equivalents (ChatGeneratorSpec for a summarising model, a hook's run_async awaiting an activity for other "
    "I/O), or import the client through the sandbox with `with temporalio.workflow.unsafe."
    "imports_passed_through():` around the import, at the risk of non-determinism."
)


def _refusal_in(err: BaseException) -> RestrictedWorkflowAccessError | None:
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        if isinstance(current, RestrictedWorkflowAccessError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _modules_importing(traceback: TracebackType | None) -> list[tuple[str, int]]:
    """The modules whose top-level code was running when the refusal was raised, outermost
    first, each with the line it was at."""
    modules: list[tuple[str, int]] = []
    while traceback is not None:
        frame = traceback.tb_frame
        if frame.f_code.co_name == "<module>":
            modules.append((str(frame.f_globals.get("__name__", "?")), traceback.tb_lineno))
        traceback = traceback.tb_next
    return modules


def sandbox_refusal_message(err: BaseException, module: str | None = None) -> str | None:
    """The message for a hook module the sandbox refused, or None when ``err`` is not such a refusal.

    :param err: What importing the module (or rebuilding the hooks) raised; the refusal may be
        its cause or context.
    :param module: The hook module that was imported; by default the outermost module whose import
        was under way when the refusal was raised.
    """
    refusal = _refusal_in(err)
    if refusal is None:
        return None
    importing = _modules_importing(refusal.__traceback__)
    if module is None:
        module = importing[0][0] if importing else "?"
    inner = [entry for entry in importing if entry[0] != module]
    access = getattr(refusal, "qualified_name", None) or str(refusal)
    if not inner:
        what = f"it accesses {access}"
    elif len(inner) == 1:
        what = f"its import of {inner[0][0]} accesses {access} (line {inner[0][1]})"
    else:
        what = f"its import of {inner[0][0]} reaches {inner[-1][0]}, which accesses {access} (line {inner[-1][1]})"
    return (
        f"Hook module {module!r} cannot be imported inside Temporal's workflow sandbox: {what}, which the "
        f"sandbox refuses (RestrictedWorkflowAccessError). {REMEDY}"
    )
