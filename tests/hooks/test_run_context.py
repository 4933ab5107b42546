"""The one way to per-run state: ``current_run()`` and the typed family slots of ``RunContext``."""

from __future__ import annotations

import pytest

from core.spec import AgentSpec
from core.state import State
from hooks.audit import AuditLedger
from hooks.context import RunContext, current_run, current_run_or_none, set_current_run
from hooks.human_in_the_loop import ConfirmationRegistry


def context() -> RunContext:
    return RunContext(run_id="r", agent=AgentSpec(model="m"), state=State(schema={}, data={"messages": []}))


def test_a_slot_is_made_once_by_its_family_and_found_by_its_class():
    run = context()
    assert run.slot(AuditLedger) is None
    made = run.slot_or_create(AuditLedger, AuditLedger)
    assert run.slot_or_create(AuditLedger, lambda: pytest.fail("made twice")) is made
    assert run.slot(AuditLedger) is made
    assert run.slot(ConfirmationRegistry) is None  # another family's slot is its own


def test_a_slot_refuses_an_object_of_another_class():
    with pytest.raises(TypeError, match="must hold a AuditLedger, got dict"):
        context().slot_or_create(AuditLedger, dict)


class TwoWaiting:
    """A family object with two requests waiting for a person (``ReportsPending``)."""

    def pending_count(self) -> int:
        return 2


def test_pending_count_sums_the_slots_that_report_pending():
    run = context()
    assert run.pending_count() == 0
    run.slot_or_create(AuditLedger, AuditLedger)  # holds nothing pending
    run.slot_or_create(ConfirmationRegistry, lambda: ConfirmationRegistry(search_attribute=None))  # none yet
    assert run.pending_count() == 0
    run.slot_or_create(TwoWaiting, TwoWaiting)
    assert run.pending_count() == 2


def test_outside_a_workflow_current_run_is_what_the_caller_set():
    assert current_run_or_none() is None
    with pytest.raises(RuntimeError, match="only available inside an AgentWorkflow run"):
        current_run()
    run = context()
    set_current_run(run)
    try:
        assert current_run() is run
    finally:
        set_current_run(None)
    assert current_run_or_none() is None
