"""``agent config``: the effective configuration, each setting with its environment variable,
value (secrets masked) and where the value came from.

``settings_table`` is the Markdown table of docs/configuration.md (tests/core/test_settings.py
checks that the file holds the current one).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Literal

from pydantic import BaseModel, SecretStr

from agent.command_line import add_command
from core.model_endpoints import ModelEndpoint, named_endpoints
from core.settings import (
    MASK,
    Settings,
    SettingsError,
    allowed_values,
    env_name,
    get_settings,
)


class SettingView(BaseModel):
    """One setting as ``agent config`` shows it.

    :param field: The :class:`core.settings.Settings` field, or ``endpoint.<NAME>.<field>``.
    :param env: Its environment variable.
    :param value: Its effective value as text (secrets masked; None: unset).
    :param source: ``environment`` or ``default``.
    :param description: What it means.
    """

    field: str
    env: str
    value: str | None
    source: Literal["environment", "default"]
    description: str


def shown(value: Any) -> str | None:
    """``value`` as ``agent config`` prints it: secrets as ``********``, booleans as true/false."""
    if value is None:
        return None
    if isinstance(value, SecretStr):
        return MASK
    return str(value).lower() if isinstance(value, bool) else str(value)


def describe_settings() -> list[SettingView]:
    """Every setting with its variable, effective value (secrets masked) and source, then the
    variables of each named model endpoint the environment configures.

    :raises core.settings.SettingsError: A variable has a bad value.
    """
    settings = get_settings()
    views = [
        SettingView(
            field=field,
            env=env_name(field),
            value=shown(getattr(settings, field)),
            source=settings.source(field),
            description=info.description or "",
        )
        for field, info in Settings.model_fields.items()
    ]
    for endpoint in named_endpoints():
        for field in ("base_url", "api_key", "timeout_seconds"):
            variable = endpoint.env_name(field)
            views.append(
                SettingView(
                    field=f"endpoint.{endpoint.name}.{field}",
                    env=variable,
                    value=shown(getattr(endpoint, field)),
                    source="environment" if endpoint.is_set(field) else "default",
                    description=f"Model endpoint {endpoint.name}: {ModelEndpoint.model_fields[field].description}.",
                )
            )
    return views


def settings_table() -> str:
    """The Markdown table of every setting: variable, default, allowed values, meaning."""
    rows = ["| Variable | Default | Allowed | Meaning |", "|---|---|---|---|"]
    for field, info in Settings.model_fields.items():
        default = shown(info.default)
        cells = [f"`{env_name(field)}`", f"`{default}`" if default else "(unset)", allowed_values(field)]
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in [*cells, info.description or ""]) + " |")
    return "\n".join(rows) + "\n"


def cmd_config(args: argparse.Namespace) -> int:
    """Print the effective configuration (a table, or JSON with ``--json``); 1 on a bad value."""
    try:
        views = describe_settings()
    except SettingsError as exc:
        print(f"agent: error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([view.model_dump() for view in views], indent=2))
        return 0
    width = max(len(view.env) for view in views)
    for view in views:
        value = "(unset)" if view.value is None else view.value
        print(f"{view.env:<{width}}  {view.source:<11}  {value}")
    return 0


async def _handler(args: argparse.Namespace, client: None) -> int:
    return cmd_config(args)


def add_config_command(sub: argparse._SubParsersAction) -> None:
    """Register ``agent config`` on the CLI's subparsers (it needs no Temporal connection)."""
    config = add_command(
        sub,
        "config",
        "print the effective configuration: each setting, its variable, value (secrets masked), source",
        "Print every setting this process would use: its environment variable, where its value came "
        "from (the environment or the default) and the value, with secrets masked. A bad value is named with "
        "what is allowed, and the command exits 2.",
        "examples:\n  agent config\n  agent config --json\n  source .agent-dev/env.sh && agent config",
    )
    config.add_argument("--json", action="store_true", help="print JSON: [{field, env, value, source, description}]")
    config.set_defaults(handler=_handler, needs_client=False)
