"""Human-in-the-loop that waits for days: confirm, modify or reject tool calls before they run.

Same names and rules as Haystack 3.x's ``haystack.hooks.human_in_the_loop`` (``ConfirmationHook``,
the policies, ``BlockingConfirmationStrategy``, ``ConfirmationUI``, ``SimpleConsoleUI``,
``RichConsoleUI``, ``ToolExecutionDecision``, ``ConfirmationUIResult``), with durable strategies:
``DurableConfirmationStrategy`` (and ``BlockingConfirmationStrategy``, which also names the UI the
approver is asked through) waits in the workflow for a decision sent by Signal
(``tool_decision``) or validated Update (``submit_tool_decision``), for as long as it takes.

Approval routing: ``RulePolicy`` (a CEL rule over ``args`` and ``tool``), ``Escalation`` steps
on a strategy, and ``WebhookNotifier`` (signed events with one-time approve/reject links).
"""

from core.tool_records import CONFIRMATION_KEY, arguments_sha256
from hooks.family import HookFamily
from hooks.human_in_the_loop.activities import deliver_approval_event
from hooks.human_in_the_loop.checks import check_waiting_search_attribute
from hooks.human_in_the_loop.dataclasses import (
    ConfirmationUIResult,
    DecisionRecord,
    PendingConfirmation,
    ToolDecision,
    ToolExecutionDecision,
)
from hooks.human_in_the_loop.escalation import Escalation
from hooks.human_in_the_loop.handlers import register_confirmation_handlers
from hooks.human_in_the_loop.hooks import ConfirmationHook
from hooks.human_in_the_loop.notifiers import ApprovalEvent, WebhookNotifier
from hooks.human_in_the_loop.policies import AlwaysAskPolicy, AskOncePolicy, NeverAskPolicy
from hooks.human_in_the_loop.protocol import ConfirmationPolicy, ConfirmationStrategy, ConfirmationUI
from hooks.human_in_the_loop.registry import ConfirmationRegistry, DecisionError
from hooks.human_in_the_loop.rules import RulePolicy
from hooks.human_in_the_loop.strategies import BlockingConfirmationStrategy, DurableConfirmationStrategy
from hooks.human_in_the_loop.user_interfaces import RichConsoleUI, SimpleConsoleUI

#: What the worker provides for confirmations: the webhook delivery activity and the Signal, Update and
#: Query handlers (the people's side, ``agent pending``/``approve``/..., is ``agent.approvals``).
FAMILY = HookFamily(
    name="human_in_the_loop",
    activities=[deliver_approval_event],
    register_handlers=register_confirmation_handlers,
    check=check_waiting_search_attribute,
)

__all__ = [
    "CONFIRMATION_KEY",
    "AlwaysAskPolicy",
    "ApprovalEvent",
    "AskOncePolicy",
    "BlockingConfirmationStrategy",
    "ConfirmationHook",
    "ConfirmationPolicy",
    "ConfirmationRegistry",
    "ConfirmationStrategy",
    "ConfirmationUI",
    "ConfirmationUIResult",
    "DecisionError",
    "DecisionRecord",
    "DurableConfirmationStrategy",
    "Escalation",
    "NeverAskPolicy",
    "PendingConfirmation",
    "RichConsoleUI",
    "RulePolicy",
    "SimpleConsoleUI",
    "ToolDecision",
    "ToolExecutionDecision",
    "WebhookNotifier",
    "arguments_sha256",
]
