"""The people's side of approvals: what a person or a client program uses to see and decide on
runs waiting for a confirmation (the workflow side is ``hooks.human_in_the_loop``).

- :mod:`agent.approvals.decisions`: send a decision, read a run's pending calls (with a
  deadline), the one "modify" JSON reader and the one default approver;
- :mod:`agent.approvals.waiting`: every waiting run of the namespace, from visibility;
- :mod:`agent.approvals.commands`: ``agent pending``, ``approve``, ``reject``, ``modify``;
- :mod:`agent.approvals.interactive`: ``agent approve --interactive`` through a ``ConfirmationUI``;
- :mod:`agent.approvals.inbox_pages`: the inbox's waiting list and call pages.
"""
