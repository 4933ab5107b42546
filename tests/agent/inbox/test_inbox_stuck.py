"""The inbox's run page of a stuck run (its workflow task keeps failing): at the top, the attempt,
the error, the fix and the hint, over HTTP against the app, the session's dev server and a worker."""

from __future__ import annotations

import re

import httpx

from agent.inbox import IdentityConfig, create_app
from tests.agent.inbox.support import IDENTITY_HEADER
from tests.support.stuck_runs import HINT, WALL_CLOCK_ERROR, fix_for, stuck_run


def by_testid(html: str, name: str) -> str:
    match = re.search(rf'data-testid="{name}">(.*?)</', html, re.S)
    assert match, f"the page has no {name}"
    return match.group(1)


async def test_the_run_page_of_a_stuck_run_shows_the_failing_task_first(client, worker, scripted, model, run_id):
    app = create_app(client, identity=IdentityConfig(header=IDENTITY_HEADER))
    transport = httpx.ASGITransport(app=app)
    async with (
        stuck_run(client, worker, scripted, model, run_id),
        httpx.AsyncClient(transport=transport, base_url="http://inbox.test", headers={IDENTITY_HEADER: "ann"}) as web,
    ):
        page = await web.get(f"/runs/{run_id}")
    assert page.status_code == 200, page.text
    html = page.text
    assert html.index('data-testid="stuck"') < html.index('data-testid="run-status"')  # at the top
    assert int(by_testid(html, "stuck-attempt")) >= 2
    assert by_testid(html, "stuck-error") == WALL_CLOCK_ERROR
    assert by_testid(html, "stuck-fix") == f"To fix it, {fix_for(worker)}."
    assert by_testid(html, "stuck-hint") == f"Hint: {HINT}."
    assert by_testid(html, "run-status") == "running"
    assert "Workflow Task in failed state" not in html
