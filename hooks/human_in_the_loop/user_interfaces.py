"""Ready-made confirmation UIs (as Haystack's ``user_interfaces``): ask a person on a terminal.

These are approver-side code. A ``BlockingConfirmationStrategy`` names its UI in every request it
publishes, and ``agent approve --interactive`` asks through that UI; a local (non-durable) run
asks through it directly. They never run inside a workflow: a workflow waits for the decision
instead (``workflow.wait_condition``), so no worker thread ever blocks on a prompt.

Both UIs travel by import path (``to_dict``/``from_dict``), so the approver's process rebuilds
the one the run names. ``RichConsoleUI`` imports ``rich`` only when it first prompts: workers
import this module with the human-in-the-loop family, and loading ``rich`` there would cost
every worker process for a UI only an approver uses.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from core.serialization import default_to_dict
from hooks.human_in_the_loop.dataclasses import ConfirmationUIResult
from hooks.human_in_the_loop.protocol import ConfirmationUI

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["RichConsoleUI", "SimpleConsoleUI"]

#: One prompt at a time in a process: strategies run concurrently, a terminal does not.
_PROMPT_LOCK = threading.Lock()

#: Answers the console UIs accept, and the action each stands for.
CHOICES: dict[str, str] = {
    "y": "confirm",
    "yes": "confirm",
    "n": "reject",
    "no": "reject",
    "m": "modify",
    "modify": "modify",
}


def _editable(value: Any) -> str:
    """How a current value is shown for editing: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _parse_edit(current: Any, typed: str) -> Any:
    """The new value of a parameter from what was typed: text for a string parameter (no quotes
    needed), JSON for any other.

    :raises json.JSONDecodeError: When a non-string parameter's new value is not JSON.
    """
    return typed if isinstance(current, str) else json.loads(typed)


class SimpleConsoleUI(ConfirmationUI):
    """Ask with plain ``input()`` and ``print()``: show the call, then read ``y`` (run it as
    requested), ``n`` (do not run it; an optional reason for the model follows) or ``m`` (type a
    new value for each parameter: text for a string, JSON for anything else; Enter keeps the
    current value)."""

    def get_user_confirmation(
        self, tool_name: str, tool_description: str, tool_params: dict[str, Any]
    ) -> ConfirmationUIResult:
        """Show the call and read the answer from standard input.

        :param tool_name: The tool to be called.
        :param tool_description: Its description.
        :param tool_params: The arguments it would be called with.
        :raises EOFError: When standard input ends before an answer.
        """
        with _PROMPT_LOCK:
            self._show(tool_name, tool_description, tool_params)
            while True:
                choice = input("Run it? y = yes as shown, n = no, m = change the arguments: ").strip().lower()
                if choice in CHOICES:
                    break
                print("Answer y, n or m.")
            action = CHOICES[choice]
            if action == "confirm":
                return ConfirmationUIResult(action="confirm")
            if action == "modify":
                return ConfirmationUIResult(action="modify", new_tool_params=self._edit(tool_params))
            feedback = input("Why not? (optional, the model reads it): ").strip()
            return ConfirmationUIResult(action="reject", feedback=feedback or None)

    @staticmethod
    def _show(tool_name: str, tool_description: str, tool_params: dict[str, Any]) -> None:
        print()
        print(f"== {tool_name} wants to run ==")
        if tool_description:
            print(f"  {tool_description}")
        if tool_params:
            for key, value in tool_params.items():
                print(f"  {key} = {_editable(value)}")
        else:
            print("  (no arguments)")

    @staticmethod
    def _edit(tool_params: dict[str, Any]) -> dict[str, Any]:
        if not tool_params:
            print("This call has no arguments to change.")
            return {}
        edited: dict[str, Any] = {}
        for key, value in tool_params.items():
            shown = _editable(value)
            while True:
                typed = input(f"  {key} [{shown}]: ").strip() or shown
                try:
                    edited[key] = _parse_edit(value, typed)
                    break
                except json.JSONDecodeError as err:
                    print(f"  Not JSON ({err.msg}); try again.")
        return edited

    def __repr__(self) -> str:
        return "SimpleConsoleUI()"


class RichConsoleUI(ConfirmationUI):
    """Ask with the ``rich`` library: the call in a panel, then a prompt for ``y`` (the default),
    ``n`` or ``m``, and, for ``m``, a prompt per parameter prefilled with its current value.

    :param console: The ``rich.console.Console`` to use; by default one on the terminal, made when
        the UI first asks (so building the UI does not load ``rich``). It is not serialised
        (``to_dict`` stores None), as in Haystack.
    """

    def __init__(self, console: Console | None = None) -> None:
        self.console = console

    def _terminal(self) -> Console:
        """The console, made on first use (so building the UI, e.g. on a worker, does not load ``rich``)."""
        if self.console is None:
            self.console = _rich()[0]()
        return self.console

    def get_user_confirmation(
        self, tool_name: str, tool_description: str, tool_params: dict[str, Any]
    ) -> ConfirmationUIResult:
        """Show the call and prompt for the answer.

        :param tool_name: The tool to be called.
        :param tool_description: Its description.
        :param tool_params: The arguments it would be called with.
        :raises EOFError: When standard input ends before an answer.
        """
        _, panel, prompt = _rich()
        console = self._terminal()
        with _PROMPT_LOCK:
            console.print(panel(self._describe(tool_name, tool_description, tool_params), title=tool_name))
            choice = prompt.ask(
                "Run it? y = yes as shown, n = no, m = change the arguments",
                choices=["y", "n", "m"],
                default="y",
                console=console,
            )
            if choice == "y":
                return ConfirmationUIResult(action="confirm")
            if choice == "m":
                return ConfirmationUIResult(action="modify", new_tool_params=self._edit(tool_params, prompt))
            feedback = prompt.ask("Why not? (optional, the model reads it)", default="", console=console)
            return ConfirmationUIResult(action="reject", feedback=feedback or None)

    @staticmethod
    def _describe(tool_name: str, tool_description: str, tool_params: dict[str, Any]) -> str:
        from rich.markup import escape  # loaded only once the UI is used (see the module docstring)

        lines = [f"[bold]{escape(tool_name)}[/bold] wants to run"]
        if tool_description:
            lines.append(f"[dim]{escape(tool_description)}[/dim]")
        lines.append("")
        if tool_params:
            lines += [f"[cyan]{escape(key)}[/cyan] = {escape(_editable(value))}" for key, value in tool_params.items()]
        else:
            lines.append("(no arguments)")
        return "\n".join(lines)

    def _edit(self, tool_params: dict[str, Any], prompt: Any) -> dict[str, Any]:
        console = self._terminal()
        if not tool_params:
            console.print("This call has no arguments to change.")
            return {}
        edited: dict[str, Any] = {}
        for key, value in tool_params.items():
            while True:
                typed = prompt.ask(f"  {key}", default=_editable(value), console=console)
                try:
                    edited[key] = _parse_edit(value, typed)
                    break
                except json.JSONDecodeError as err:
                    console.print(f"[red]Not JSON ({err.msg}); try again.[/red]")
        return edited

    def to_dict(self) -> dict[str, Any]:
        """Serialise; the console is not (the approver's side makes its own)."""
        return default_to_dict(self, console=None)

    def __repr__(self) -> str:
        return "RichConsoleUI()"


def _rich() -> tuple[Any, Any, Any]:
    """``rich``'s Console, Panel and Prompt, imported on first use (see the module docstring)."""
    from rich.console import Console
    from rich.panel import Panel
    from rich.prompt import Prompt

    return Console, Panel, Prompt
