// A minimal AG-UI frontend: the official client (@ag-ui/client's HttpAgent, bundled into
// agui-client.js by build.sh) against POST /ag-ui/AGENT, served from the same origin by serve.py.
// Chat with the agent; a call waiting for approval shows as a card; Approve / Reject resume it.
import { HttpAgent } from "./agui-client.js";

const params = new URLSearchParams(location.search);
const agentName = params.get("agent") || "agent";
const $ = (id) => document.getElementById(id);

function threadId() {
  let id = localStorage.getItem("agui-thread");
  if (!id) {
    id = `web-${crypto.randomUUID()}`;
    localStorage.setItem("agui-thread", id);
  }
  return id;
}

function makeAgent(messages) {
  return new HttpAgent({ url: `/ag-ui/${agentName}`, threadId: threadId(), initialMessages: messages || [] });
}

let agent = makeAgent();

function render() {
  $("thread-id").textContent = agent.threadId;
  const box = $("messages");
  box.replaceChildren();
  for (const message of agent.messages) {
    const div = document.createElement("div");
    div.className = `message ${message.role}`;
    div.dataset.id = message.id;
    div.textContent = typeof message.content === "string" ? message.content : "";
    for (const call of message.toolCalls || []) {
      const line = document.createElement("div");
      line.className = "call";
      line.textContent = `→ ${call.function.name}(${call.function.arguments})`;
      div.append(line);
    }
    box.append(div);
  }
  const cards = $("approvals");
  cards.replaceChildren();
  for (const interrupt of agent.pendingInterrupts) {
    cards.append(approvalCard(interrupt));
  }
}

function approvalCard(interrupt) {
  const card = document.createElement("div");
  card.className = "approval";
  card.dataset.interrupt = interrupt.id;
  const meta = interrupt.metadata || {};
  const title = document.createElement("strong");
  title.textContent = `Approve ${meta.toolName}?`;
  const args = document.createElement("pre");
  args.textContent = JSON.stringify(meta.arguments, null, 2);
  const feedback = document.createElement("input");
  feedback.placeholder = "feedback for the model (optional)";
  const approve = document.createElement("button");
  approve.textContent = "Approve";
  approve.className = "approve";
  const reject = document.createElement("button");
  reject.textContent = "Reject";
  reject.className = "reject";
  const answer = (action) =>
    run({
      resume: agent.pendingInterrupts.map((each) => ({
        interruptId: each.id,
        status: "resolved",
        payload: {
          action: each.id === interrupt.id ? action : "reject",
          argumentsSha256: (each.metadata || {}).argumentsSha256,
          ...(feedback.value ? { feedback: feedback.value } : {}),
        },
      })),
    });
  approve.addEventListener("click", () => answer("approve"));
  reject.addEventListener("click", () => answer("reject"));
  card.append(title, args, feedback, approve, reject);
  return card;
}

async function run(parameters) {
  $("send").disabled = true;
  $("status").textContent = "working…";
  try {
    await agent.runAgent(parameters, {
      onMessagesChanged: render,
      onRunFinishedEvent: ({ outcome }) => {
        $("status").textContent = outcome === "interrupt" ? "waiting for your approval" : "done";
      },
      onRunErrorEvent: ({ event }) => {
        $("status").textContent = `error: ${event.message}`;
      },
    });
  } catch (err) {
    $("status").textContent = `error: ${err.message}`;
  } finally {
    $("send").disabled = false;
    render();
  }
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = $("text").value.trim();
  if (!text) return;
  $("text").value = "";
  agent.addMessage({ id: `u-${crypto.randomUUID()}`, role: "user", content: text });
  render();
  run({});
});

$("new-thread").addEventListener("click", () => {
  localStorage.removeItem("agui-thread");
  agent = makeAgent();
  render();
});

// A page loaded on a known thread re-attaches: the endpoint sends what this page lacks.
if (localStorage.getItem("agui-thread")) run({});
render();
