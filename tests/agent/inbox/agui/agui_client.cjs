// Drives the AG-UI endpoint with the official client (npm @ag-ui/client, HttpAgent), as a frontend would.
//
// node agui_client.cjs CLIENT_DIR CONFIG_JSON
//   CLIENT_DIR: where `npm install --prefix CLIENT_DIR @ag-ui/client@1` put the package.
//   CONFIG_JSON: {"url", "threadId", "headers"?, "steps": [step, ...]}, each step one of
//     {"say": TEXT, "messageId"?}        add a user message and run the agent (a new turn)
//     {"resume": {"action", "feedback"?, "arguments"?, "argumentsSha256"?: "from-interrupt"} | "cancelled"}
//                                         answer every pending interrupt and run
//     {"resume": ..., "onlyFirst": true}   the first interrupt gets it, the others are cancelled
//     {"say"/"resume"..., "dropAfter": N} abort the HTTP stream after N TEXT_MESSAGE_CONTENT events
//     {"reattach": true}                  a new HttpAgent on the same thread with the messages the old one
//                                         had (a reloaded page), run with no new message
//     {"raw": {"body": ..., "contentType"?}}  POST a body as is (bad input), report the HTTP status
// Prints one JSON object: {"steps": [{"events": [...], "error"?, "status"?, "messages", "pendingInterrupts"}]}.
"use strict";
const { createRequire } = require("node:module");
const path = require("node:path");

const [clientDir, configText] = process.argv.slice(2);
const { HttpAgent } = createRequire(path.join(clientDir, "package.json"))("@ag-ui/client");
const config = JSON.parse(configText);

function newAgent(messages) {
  return new HttpAgent({
    url: config.url,
    threadId: config.threadId,
    headers: config.headers || {},
    initialMessages: messages || [],
  });
}

async function runStep(agent, step) {
  const events = [];
  const out = { events };
  let contents = 0;
  const params = {};
  if (step.say !== undefined) {
    agent.addMessage({ id: step.messageId || `u-${Date.now()}-${Math.random()}`, role: "user", content: step.say });
  }
  if (step.resume !== undefined) {
    params.resume = agent.pendingInterrupts.map((interrupt) => {
      if (step.resume === "cancelled") return { interruptId: interrupt.id, status: "cancelled" };
      const payload = { ...step.resume };
      if (payload.argumentsSha256 === "from-interrupt") payload.argumentsSha256 = interrupt.metadata.argumentsSha256;
      // onlyFirst: the first interrupt gets the payload, the others are cancelled (rejected)
      if (step.onlyFirst && interrupt !== agent.pendingInterrupts[0]) return { interruptId: interrupt.id, status: "cancelled" };
      return { interruptId: step.interruptId || interrupt.id, status: "resolved", payload };
    });
  }
  const subscriber = {
    onEvent({ event }) {
      events.push({ ...event, at: Date.now() });
      if (event.type === "TEXT_MESSAGE_CONTENT") {
        contents += 1;
        if (step.dropAfter !== undefined && contents >= step.dropAfter) agent.abortRun();
      }
    },
  };
  try {
    await agent.runAgent(params, subscriber);
  } catch (err) {
    out.error = String(err && err.message ? err.message : err);
    if (err && err.status !== undefined) out.status = err.status;
  }
  out.messages = JSON.parse(JSON.stringify(agent.messages));
  out.pendingInterrupts = JSON.parse(JSON.stringify(agent.pendingInterrupts));
  return out;
}

async function rawStep(step) {
  const response = await fetch(config.url, {
    method: "POST",
    headers: { "Content-Type": step.raw.contentType || "application/json", ...(config.headers || {}) },
    body: typeof step.raw.body === "string" ? step.raw.body : JSON.stringify(step.raw.body),
  });
  return { events: [], status: response.status, body: await response.text() };
}

(async () => {
  let agent = newAgent();
  const steps = [];
  for (const step of config.steps) {
    if (step.raw) {
      steps.push(await rawStep(step));
      continue;
    }
    if (step.reattach) agent = newAgent(agent.messages);
    steps.push(await runStep(agent, step));
  }
  process.stdout.write(JSON.stringify({ steps }));
})().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err));
  process.exit(1);
});
