"""``env.sh``: the variables another shell needs to use a running ``agent dev``, for ``source``."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

HEADER = "# Written by `agent dev`: `source` this file in another shell to reach its stack.\n"


def write_env_file(path: Path, env: dict[str, str]) -> Path:
    """Write ``export KEY=value`` lines (values shell-quoted) to ``path``, atomically: a shell
    sourcing it meanwhile reads the old file or the new one, never half of one.

    :param path: The file (its directory is created).
    :param env: Variable name -> value.
    :returns: ``path``.
    :raises ValueError: For a name that is not a shell identifier.
    """
    bad = [key for key in env if not key.isidentifier()]
    if bad:
        raise ValueError(f"Not shell variable names: {', '.join(bad)}.")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(HEADER + "".join(f"export {key}={shlex.quote(value)}\n" for key, value in env.items()))
    os.replace(partial, path)
    return path


def read_env_file(path: Path) -> dict[str, str]:
    """The ``export KEY=value`` lines of a file :func:`write_env_file` wrote, as a shell reads them.

    :raises ValueError: For a line that is neither a comment nor such an export.
    """
    values: dict[str, str] = {}
    for line in Path(path).read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        words = shlex.split(line)
        if len(words) != 2 or words[0] != "export" or "=" not in words[1]:
            raise ValueError(f"{path}: not an `export KEY=value` line: {line!r}")
        key, _, value = words[1].partition("=")
        values[key] = value
    return values
