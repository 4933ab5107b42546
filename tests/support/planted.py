"""A module on ``sys.path`` that no worker operator configured, for the trust-gate tests: importing
it, or calling anything in it, leaves a mark on disk, so a test can show it never ran."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def planted_module(directory: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Iterator[Path]:
    """Write module ``name`` into ``directory`` and put that on ``sys.path``; yields the mark file
    ("imported" once imported, "ran" once any of its functions or classes ran). Its members: a hook
    function ``shout``, a hook class ``Loud``, a state type ``Amount`` and a state handler ``keep``."""
    mark = directory / f"{name}.mark"
    (directory / f"{name}.py").write_text(
        textwrap.dedent(
            f"""
            from pathlib import Path
            Path({str(mark)!r}).write_text("imported")
            from core.state import State

            def shout(state: State) -> None:
                Path({str(mark)!r}).write_text("ran")

            class Loud:
                def run(self, state):
                    Path({str(mark)!r}).write_text("ran")

            class Amount(int):
                pass

            def keep(current, new):
                Path({str(mark)!r}).write_text("ran")
                return new
            """
        )
    )
    monkeypatch.syspath_prepend(str(directory))
    try:
        yield mark
    finally:
        sys.modules.pop(name, None)
