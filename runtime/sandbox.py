"""The workflow sandbox: which modules pass through it, and the code it imports compiled once.

Temporal's sandbox imports a workflow's module (and any module that is not passed through, such
as a user's hook module) anew for every run it starts or rebuilds: a new run, a run continued as
new, and a run evicted from the worker's cache that replays its history when an approval
arrives. Python takes that module's code from its ``.pyc`` file when there is one; when there is
none (``PYTHONDONTWRITEBYTECODE``, an editable install, a read-only tree), it compiles the source
every time. ``workflows/agent_workflow.py`` takes about 7 ms to compile, a fifth of an evicted
run's replay. :class:`CompiledOnceFinder` keeps the code of every module imported inside a
sandbox, so each is compiled once per worker process. The module itself is still executed anew
in each sandbox, so the sandbox's isolation and checks are unchanged.

:func:`check_hook_modules` imports an agent's hook modules the way that sandbox will, so that
``Agent(...)`` refuses a module the worker would refuse on every run.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, SourceFileLoader
from types import CodeType, ModuleType
from typing import Any, ClassVar

from temporalio import workflow
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

# The sandbox's own importer, which the runner uses; not public API, so a temporalio upgrade that
# moves it fails tests/runtime/test_hook_sandbox.py rather than a user's run.
from temporalio.worker.workflow_sandbox._importer import Importer
from temporalio.worker.workflow_sandbox._restrictions import RestrictionContext

from core.sandbox_refusal import sandbox_refusal_message
from core.spec import AgentSpec
from hooks.from_function import FunctionHook

#: Deterministic modules shared by all workflows instead of re-imported into each sandbox:
#: faster, and module-level caches (tiktoken's encodings, boto3 clients) live once per process.
#: The run's own code (``workflows``) is still imported into each sandbox and checked there.
PASSTHROUGH_MODULES = (
    "agent",  # user hook modules import the public names from it
    "core",
    "activities",
    "hooks",
    "tiktoken",
    "pydantic",
    "httpx",
    "openai",
    "boto3",
    "botocore",
    "jsonschema",
    "cel",  # RulePolicy's CEL programs (a compiled extension, deterministic)
    "standardwebhooks",
    "opentelemetry",  # the run loop's spans use the process's tracer provider (workflows/spans.py)
)

#: The worker's sandbox restrictions: Temporal's defaults with :data:`PASSTHROUGH_MODULES`.
SANDBOX_RESTRICTIONS = SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH_MODULES)


class CompiledOnceLoader(SourceFileLoader):
    """A source loader that compiles a file once per process and hands out that code after.

    A worker runs the code it first loaded: a source file changed on disk while the worker runs
    is not picked up (the classes it registered at start would not match it either).
    """

    _code: ClassVar[dict[str, CodeType]] = {}

    def get_code(self, fullname: str) -> CodeType:
        code = self._code.get(self.path)
        if code is None:
            # sandboxes of different runs may import at once (activations run in a thread pool):
            # at worst two compile the same file, and one code object wins
            code = self._code.setdefault(self.path, super().get_code(fullname))
        return code


class CompiledOnceFinder(MetaPathFinder):
    """Finds modules for imports made inside a workflow sandbox and loads source files through
    :class:`CompiledOnceLoader`. Outside a sandbox it finds nothing, so the usual finders apply."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not workflow.unsafe.in_sandbox():
            return None
        # the spec the finders after this one give, as the import system would find it
        for finder in sys.meta_path[sys.meta_path.index(self) + 1 :]:
            find_spec = getattr(finder, "find_spec", None)
            spec = find_spec(fullname, path, target) if find_spec is not None else None
            if spec is not None:
                break
        else:
            return None
        if type(spec.loader) is SourceFileLoader and spec.origin is not None:
            spec.loader = CompiledOnceLoader(fullname, spec.origin)
        return spec


def install_compiled_once_finder() -> None:
    """Put :class:`CompiledOnceFinder` first on ``sys.meta_path`` (once per process)."""
    if not any(isinstance(finder, CompiledOnceFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, CompiledOnceFinder())


def workflow_runner() -> SandboxedWorkflowRunner:
    """The sandbox runner with this project's pass-through modules; installs
    :class:`CompiledOnceFinder` so the modules the sandbox imports are compiled once per process."""
    install_compiled_once_finder()
    return SandboxedWorkflowRunner(restrictions=SANDBOX_RESTRICTIONS)


def _passed_through(module: str) -> bool:
    """Whether the sandbox takes ``module`` from the worker's process instead of importing it anew."""
    passthrough = SANDBOX_RESTRICTIONS.passthrough_modules
    parts = module.split(".")
    return any(".".join(parts[:end]) in passthrough for end in range(1, len(parts) + 1))


#: Module name -> the refusal message, or None when the sandbox imports it (checked once per process).
_sandbox_import_results: dict[str, str | None] = {}


def sandbox_import_problem(module: str) -> str | None:
    """Import ``module`` as the worker's sandbox imports a hook module while a run rebuilds its
    hooks (inside a workflow activation, with the worker's restrictions and pass-through modules).

    The module's top-level code runs once more, in a sandbox of its own that is then dropped; the
    result is remembered for the process.

    :param module: An importable module's name.
    :returns: The message saying what the sandbox refused and what to do, or None when the sandbox
        refuses nothing in it (it imports, or fails for a reason of its own).
    """
    if module in _sandbox_import_results:
        return _sandbox_import_results[module]
    importer = Importer(SANDBOX_RESTRICTIONS, RestrictionContext())
    importer.restriction_context.is_runtime = True  # the run imports hooks inside an activation
    problem = None
    workflow.unsafe._set_in_sandbox(True)  # what the runner sets around sandboxed code (thread-local)
    try:
        with importer.applied():
            importlib.import_module(module)
    except Exception as err:
        # Only the sandbox's refusals: a module this process found some other way (a file path)
        # may well import on the worker, and check_rebuildable has imported it here already.
        problem = sandbox_refusal_message(err, module)
    finally:
        workflow.unsafe._set_in_sandbox(False)
    _sandbox_import_results[module] = problem
    return problem


def _module_of(path: str) -> str | None:
    """The imported module an import path (``module.Qualified.Name``) lives in."""
    parts = path.split(".")
    return next((name for end in range(len(parts) - 1, 0, -1) if (name := ".".join(parts[:end])) in sys.modules), None)


def _types_in(data: Any) -> list[str]:
    """Every ``"type"`` import path in a serialised object, nested ones included."""
    if isinstance(data, dict):
        found = [data["type"]] if isinstance(data.get("type"), str) else []
        return found + [path for value in data.values() for path in _types_in(value)]
    if isinstance(data, list):
        return [path for value in data for path in _types_in(value)]
    return []


def hook_modules(spec: AgentSpec) -> list[str]:
    """The modules a worker imports into the sandbox to rebuild ``spec``'s hooks: those of every
    serialised class and of FunctionHooks' functions, less the ones passed through and ``__main__``."""
    modules = [_module_of(path) for path in _types_in(spec.hooks_to_dict())]
    for hook in spec.distinct_hooks():
        if isinstance(hook, FunctionHook):  # its functions travel by import path
            modules += [function.__module__ for function in (hook.function, hook.async_function) if function]
    ordered = dict.fromkeys(m for m in modules if m and m != "__main__" and not _passed_through(m))
    return list(ordered)


def check_hook_modules(spec: AgentSpec) -> None:
    """Refuse an agent whose hook modules the worker's sandbox would refuse on every run.

    :raises ValueError: Naming the module, what the sandbox refused in it and what to do instead.
    """
    if workflow.in_workflow():  # already sandboxed: an import here is the check itself
        return
    for module in hook_modules(spec):
        problem = sandbox_import_problem(module)
        if problem is not None:
            raise ValueError(problem)
