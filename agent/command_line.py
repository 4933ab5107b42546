"""What every ``agent`` subcommand's parser shares: a description and examples in ``--help``,
and the run argument, named ``RUN`` in every command."""

from __future__ import annotations

import argparse
from typing import Any


def add_command(subparsers: Any, name: str, help_text: str, description: str, epilog: str) -> argparse.ArgumentParser:
    """Add subcommand ``name``.

    :param subparsers: The ``agent`` parser's subparsers.
    :param help_text: The one line ``agent --help`` shows.
    :param description: The sentences ``agent NAME --help`` starts with.
    :param epilog: The examples, starting ``examples:``, shown as written.
    """
    return subparsers.add_parser(
        name,
        help=help_text,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def add_run_argument(parser: argparse.ArgumentParser, optional: bool = False, help_text: str | None = None) -> None:
    """The run's positional argument, named ``RUN`` in every command (``args.run``)."""
    parser.add_argument(
        "run", metavar="RUN", nargs="?" if optional else None, help=help_text or "the run id (workflow id)"
    )
