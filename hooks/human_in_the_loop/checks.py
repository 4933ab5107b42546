"""This family's worker-start check: the namespace has the search attribute that marks waiting runs."""

from __future__ import annotations

from temporalio.client import Client

from core.checks import check_search_attributes
from core.settings import env_name, get_settings
from hooks.human_in_the_loop.wire import WAITING_FOR_APPROVAL

#: Set to ``off`` on workers whose agents confirm without the search attribute
#: (``DurableConfirmationStrategy(search_attribute=None)``); waiting runs are then found through
#: their memo, which every run waiting for a person carries.
SEARCH_ATTRIBUTE_ENV = env_name("waiting_search_attribute")


async def check_waiting_search_attribute(client: Client) -> None:
    """Refuse to start a worker on a namespace without ``AgentWaitingForApproval`` (Bool).

    :raises core.checks.ConfigurationError: With the command that registers it.
    """
    if get_settings().waiting_search_attribute == "off":
        return
    await check_search_attributes(
        client,
        {WAITING_FOR_APPROVAL.name: "Bool"},
        needed_by="DurableConfirmationStrategy",
        hint=(
            f"To confirm without it instead, give your agents DurableConfirmationStrategy(search_attribute=None) "
            f"and start workers with {SEARCH_ATTRIBUTE_ENV}=off."
        ),
    )
