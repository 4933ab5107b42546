"""The fenced code blocks of a Markdown file, and the rule each block follows in the docs tests.

A block is labelled with its language. ``python`` and ``sh``/``bash`` blocks run; ``text`` blocks
are recorded output and never run. A code block that cannot run says so in its first line,
``# not run by the docs tests: <why>``, so a reader sees the reason too. A block whose first line
names a Python file (``# my_agent/tools.py ...``) is a module: the tests write it to that path in
a temporary directory and import it, because hooks and tools travel by import path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

RUN_LANGUAGES = {"python": "python", "py": "python", "sh": "sh", "bash": "sh"}
OUTPUT_LANGUAGES = {"text"}
NOT_RUN = re.compile(r"^#\s*not run by the docs tests:\s*(?P<why>\S.*)$")
MODULE = re.compile(r"^#\s*(?P<path>[A-Za-z_][\w/]*\.py)\b")
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,})(?P<info>[^`]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced block.

    :param path: The Markdown file.
    :param line: The 1-based line of the block's first source line (after the opening fence).
    :param language: The first word of the fence's info string, lower-cased ("" when unlabelled).
    :param source: The block's text, without the fences, de-indented by the fence's indent.
    :param after_block: True when only blank lines separate this block from the one before it
        (an output block right after a Python block is what that block prints).
    """

    path: Path
    line: int
    language: str
    source: str
    after_block: bool = False

    @property
    def first_line(self) -> str:
        return self.source.split("\n", 1)[0].strip()

    @property
    def kind(self) -> str:
        """``"python"`` or ``"sh"`` (runs), ``"output"``, ``"not run"``, ``"module"`` (a Python
        file to import), or ``"unlabelled"`` (an error: every block says what it is)."""
        if self.language in OUTPUT_LANGUAGES:
            return "output"
        if self.language not in RUN_LANGUAGES:
            return "unlabelled"
        if NOT_RUN.match(self.first_line):
            return "not run"
        if RUN_LANGUAGES[self.language] == "python" and MODULE.match(self.first_line):
            return "module"
        return RUN_LANGUAGES[self.language]

    @property
    def module_path(self) -> str:
        """For a module block: its path relative to the import root (``my_agent/tools.py``)."""
        match = MODULE.match(self.first_line)
        if match is None:
            raise ValueError(f"{self.where}: not a module block")
        return match.group("path")

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """Every fenced block of the Markdown file at ``path``, in order.

    :raises ValueError: If a fence is never closed.
    """
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").split("\n")
    index = 0
    prose_since_block = True
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            prose_since_block = prose_since_block or bool(lines[index].strip())
            index += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        body: list[str] = []
        index += 1
        start = index + 1
        while index < len(lines) and lines[index].strip() != fence:
            body.append(lines[index][indent:] if lines[index][:indent].strip() == "" else lines[index])
            index += 1
        if index == len(lines):
            raise ValueError(f"{path}:{start - 1}: a code fence that is never closed")
        info = opening["info"].strip().split()
        language = info[0].lower() if info else ""
        found.append(Block(path, start, language, "\n".join(body), after_block=not prose_since_block))
        prose_since_block = False
        index += 1
    return found
