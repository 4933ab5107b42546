"""The example AG-UI page (examples/agui_frontend) in headless Chromium: it chats with the agent
through the official client, shows a call waiting for approval as a card, and Approve resumes
the run; the page loads nothing from outside its own origin."""

from __future__ import annotations

import pytest
from playwright.async_api import expect

from agent.inbox import IdentityConfig, InboxServer, create_app
from agent.inbox.agui import AguiAgent
from examples.agui_frontend.serve import create_app as create_example_app
from tests.agent.inbox.agui.support import build_bundle, chat_agent
from tests.agent.inbox.support import tool_calls_of

WAIT_MS = 30_000


@pytest.mark.slow
async def test_the_example_page_chats_and_approves_through_an_approval_card(
    client, scripted, model, browser, browser_worker, agui_client_dir, tmp_path
):
    scripted.script(
        model,
        [
            {"text": "Hello! I can deploy services.", "pace": 0.02},
            {
                "tool_calls": [
                    {"id": "call_web", "name": "deploy_service", "arguments": {"service": "web", "replicas": 2}}
                ]
            },
            {"text": "Deployed web with 2 replicas."},
        ],
    )
    bundle = build_bundle(agui_client_dir, tmp_path / "agui-client.js")
    served = {"agent": AguiAgent(name="agent", agent=chat_agent(model), task_queue=browser_worker)}
    # As `agent dev` serves it: everyone is the dev identity.
    inbox_app = create_app(client, identity=IdentityConfig(insecure_dev_identity="dev"), agents=served)
    async with (
        InboxServer(inbox_app, port=0) as inbox,
        InboxServer(create_example_app(inbox.url, bundle), port=0) as site,
    ):
        context = await browser.new_context()
        page = await context.new_page()
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        errors: list[str] = []
        page.on("pageerror", lambda err: errors.append(str(err)))
        await page.goto(f"{site.url}/?agent=agent")
        await page.fill("#text", "hello")
        await page.click("#send")
        await expect(page.locator(".message.assistant")).to_have_text("Hello! I can deploy services.", timeout=WAIT_MS)
        await expect(page.locator("#status")).to_have_text("done")
        await page.fill("#text", "deploy web x2")
        await page.click("#send")
        card = page.locator(".approval")
        await expect(card).to_contain_text("Approve deploy_service?", timeout=WAIT_MS)
        await expect(card.locator("pre")).to_contain_text('"replicas": 2')
        run_id = await page.locator("#thread-id").text_content()
        assert tool_calls_of(run_id) == []  # it waits for the person
        await card.locator("button.approve").click()
        await expect(page.locator(".message.assistant").last).to_have_text(
            "Deployed web with 2 replicas.", timeout=WAIT_MS
        )
        await expect(page.locator(".approval")).to_have_count(0)
        await expect(page.locator(".message.tool")).to_have_text("deployed web x2 in eu-west-1")
        assert [(c["service"], c["replicas"]) for c in tool_calls_of(run_id)] == [("web", 2)]
        assert errors == []
        assert all(url.startswith(site.url) for url in requested), requested
        await context.close()
