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
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, SourceFileLoader
from types import CodeType, ModuleType
from typing import ClassVar

from temporalio import workflow
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

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
    "opentelemetry",  # the run loop's spans use the process's tracer provider (workflows/spans.py)
)


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
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH_MODULES)
    )
