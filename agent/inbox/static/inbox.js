// The inbox's only script (no third-party code): live rows on the waiting list, a run's live
// events (Server-Sent Events) on its run and conversation pages, and a check of the Modify
// editor's JSON against the tool's schema before the form is sent. The run's Update validator
// checks the arguments again; this check only saves a round trip.
"use strict";

function startLiveRows() {
  const live = document.getElementById("live");
  const body = document.getElementById("waiting-rows");
  if (!live || !body) return;
  const url = live.dataset.pollUrl;
  const every = Number(live.dataset.pollMs) || 1500;
  let busy = false;
  async function poll() {
    if (busy) return;
    busy = true;
    try {
      const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (!response.ok) throw new Error(String(response.status));
      const html = await response.text();
      if (html !== body.innerHTML) body.innerHTML = html;
      live.textContent = "live · " + new Date().toLocaleTimeString();
      live.classList.remove("offline");
    } catch (err) {
      live.textContent = "offline (" + err.message + "), retrying";
      live.classList.add("offline");
    } finally {
      busy = false;
    }
  }
  setInterval(poll, every);
}

// -- a run's live events ------------------------------------------------------------------------
// The list with data-events-url gets one line per event; the answer being written grows token by
// token in its line (keyed "r:turn:step"). Lines carry keys (messages "m:id", turns "t:n:what")
// so that an event the page already shows from history is not shown twice. EventSource resends
// the last event id (the offset) when it reconnects, so the stream resumes where it stopped.

function liveLine(list, key, className, who, text) {
  const li = document.createElement("li");
  li.className = className;
  // the same test ids as the lines the server renders: message-<role>, or turn-line
  const [kind, role] = className.split(" ");
  li.dataset.testid = kind === "msg" ? "message-" + role : "turn-line";
  if (key) li.dataset.key = key;
  if (who) {
    const strong = document.createElement("strong");
    strong.textContent = who;
    li.append(strong, ": ");
  }
  const span = document.createElement("span");
  span.className = "text";
  span.textContent = text;
  li.append(span);
  list.append(li);
  return li;
}

function keyed(list, key) {
  return Array.from(list.querySelectorAll("[data-key]")).find((li) => li.dataset.key === key) || null;
}

function describeCall(data) {
  return data.tool_name + "(" + JSON.stringify(data.arguments || {}) + ")";
}

// What one event does to the list.
function showEvent(list, event) {
  const d = event.data || {};
  const reply = "r:" + event.turn + ":" + event.step;
  const answer = keyed(list, reply);
  if (event.kind === "token") {
    const attempt = d.attempt || 1;
    const li = answer || liveLine(list, reply, "msg assistant streaming", "assistant", "");
    const shown = Number(li.dataset.attempt || attempt);
    if (!li.classList.contains("streaming") || attempt < shown) return;
    if (attempt > shown) li.querySelector(".text").textContent = "";
    li.dataset.attempt = String(attempt);
    li.querySelector(".text").textContent += d.text || "";
  } else if (event.kind === "model_retry") {
    if (!answer || !answer.classList.contains("streaming")) return;
    answer.querySelector(".text").textContent = "";
    answer.dataset.attempt = String(d.attempt);
    const note = liveLine(list, "", "turn muted", "", "the model call broke and is retried (attempt " + d.attempt + "): its answer starts over");
    list.insertBefore(note, answer);
  } else if (event.kind === "model_reply") {
    const calls = (d.tool_calls || []).map((c) => c.tool_name);
    if (answer && answer.classList.contains("streaming")) {
      if (d.text) answer.querySelector(".text").textContent = d.text;
      else answer.remove();
      answer.classList.remove("streaming");
    } else if (!answer && d.text) {
      liveLine(list, reply, "msg assistant", "assistant", d.text);
    }
    if (calls.length) liveLine(list, "", "turn muted", "", "the model asked for " + calls.join(", "));
  } else if (event.kind === "message_received") {
    const key = "m:" + d.message_id;
    if (!keyed(list, key)) liveLine(list, key, "msg user", d.sender || "user", d.text);
  } else if (event.kind === "turn_started" || event.kind === "turn_ended") {
    const what = event.kind.slice(5);
    const key = "t:" + event.turn + ":" + what;
    if (!keyed(list, key)) liveLine(list, key, "turn muted", "", "turn " + event.turn + " " + what);
  } else {
    const text = {
      tool_started: () => "tool " + describeCall(d) + " started",
      tool_finished: () => "tool " + d.tool_name + (d.error ? " failed: " : " → ") + (d.result_preview || ""),
      approval_requested: () => "waiting for approval of " + describeCall(d) + " (" + d.tool_call_id + ")",
      decision: () => d.action + " of " + d.tool_call_id + (d.approver ? " by " + d.approver : ""),
      run_ended: () => "run ended: " + d.exit_reason,
    }[event.kind];
    if (text) liveLine(list, "", "turn muted live-event " + event.kind, "", text());
  }
}

// Where a new EventSource starts: after the last event shown, else the page's next offset.
function resumeOffset(list) {
  const last = list.dataset.lastOffset;
  return last !== undefined && last !== "" ? String(Number(last) + 1) : list.dataset.nextOffset || "0";
}

function startLiveEvents() {
  const list = document.querySelector("ol[data-events-url]");
  if (!list || typeof EventSource === "undefined") return;
  const state = document.getElementById("live-state");
  const say = (text, bad) => {
    if (!state) return;
    state.textContent = text;
    state.classList.toggle("offline", Boolean(bad));
  };
  let retryMs = 1000;
  const connect = () => {
    const source = new EventSource(list.dataset.eventsUrl + "?from=" + resumeOffset(list));
    source.onopen = () => {
      retryMs = 1000;
      say("live");
    };
    source.onmessage = (message) => {
      const event = JSON.parse(message.data);
      if (event.kind === "run_rewound") {
        // the run went back to an earlier step: show it as its history now reads
        source.close();
        window.location.reload();
        return;
      }
      showEvent(list, event);
      list.dataset.lastOffset = message.lastEventId;
    };
    source.onerror = () => {
      say("connection lost, reconnecting", true);
      // The browser retries by itself unless the response was an error (a proxy's 502, a
      // restarting inbox): then the source is closed for good, so open a new one from the
      // last event shown, waiting longer each time (up to 30 s).
      if (source.readyState === EventSource.CLOSED) {
        setTimeout(connect, retryMs);
        retryMs = Math.min(retryMs * 2, 30000);
      }
    };
    source.addEventListener("end", () => {
      source.close();
      say("the run ended");
    });
    source.addEventListener("unavailable", (message) => {
      source.close();
      say(message.data, true);
    });
  };
  connect();
}

const JSON_TYPES = {
  string: (v) => typeof v === "string",
  integer: (v) => Number.isInteger(v),
  number: (v) => typeof v === "number" && Number.isFinite(v),
  boolean: (v) => typeof v === "boolean",
  array: (v) => Array.isArray(v),
  object: (v) => v !== null && typeof v === "object" && !Array.isArray(v),
  null: (v) => v === null,
};

function typesOf(schema) {
  if (!schema) return [];
  if (typeof schema.type === "string") return [schema.type];
  if (Array.isArray(schema.type)) return schema.type;
  const alternatives = schema.anyOf || schema.oneOf;
  if (Array.isArray(alternatives)) {
    const all = alternatives.map(typesOf);
    return all.some((t) => t.length === 0) ? [] : all.flat();
  }
  return [];
}

// Problems of `value` against `schema` (top level: object, required keys, property types,
// enum values, additionalProperties false). Returns a list of sentences; empty when fine.
function schemaProblems(value, schema) {
  if (!JSON_TYPES.object(value)) return ["The arguments must be a JSON object, e.g. {\"name\": \"value\"}."];
  const problems = [];
  const properties = schema.properties || {};
  for (const key of schema.required || []) {
    if (!(key in value)) problems.push(`"${key}" is required.`);
  }
  for (const [key, item] of Object.entries(value)) {
    const property = properties[key];
    if (!property) {
      if (schema.additionalProperties === false) problems.push(`"${key}" is not an argument of this tool.`);
      continue;
    }
    const types = typesOf(property);
    if (types.length && !types.some((t) => (JSON_TYPES[t] || (() => true))(item))) {
      problems.push(`"${key}" must be ${types.join(" or ")}, got ${JSON.stringify(item)}.`);
    }
    if (Array.isArray(property.enum) && !property.enum.some((e) => JSON.stringify(e) === JSON.stringify(item))) {
      problems.push(`"${key}" must be one of ${property.enum.map((e) => JSON.stringify(e)).join(", ")}.`);
    }
  }
  return problems;
}

function startSchemaCheck() {
  const form = document.getElementById("modify-form");
  if (!form) return;
  const editor = form.querySelector("textarea.json-editor");
  const out = document.getElementById("modify-error");
  let schema = {};
  try {
    schema = JSON.parse(editor.dataset.schema || "{}");
  } catch (err) {
    schema = {};
  }
  function check() {
    let value;
    try {
      value = JSON.parse(editor.value);
    } catch (err) {
      return ["Not valid JSON: " + err.message];
    }
    return schemaProblems(value, schema);
  }
  function show(problems) {
    out.hidden = problems.length === 0;
    out.textContent = problems.join(" ");
    editor.setAttribute("aria-invalid", problems.length ? "true" : "false");
  }
  form.addEventListener("submit", (event) => {
    const problems = check();
    show(problems);
    if (problems.length) event.preventDefault();
  });
  editor.addEventListener("input", () => {
    if (!out.hidden) show(check());
  });
}

// On a call page: tell the person when someone else has decided the call meanwhile, from the
// run's events (a decision event for this call), or by polling the call's state when the run's
// events cannot be read.
function startCallWatch() {
  const banner = document.getElementById("decided-elsewhere");
  if (!banner) return;
  const poll = () => {
    const timer = setInterval(async () => {
      try {
        const response = await fetch(banner.dataset.stateUrl, { credentials: "same-origin" });
        if (!response.ok) return;
        const state = await response.json();
        if (!state.waiting) {
          banner.hidden = false;
          clearInterval(timer);
        }
      } catch (err) {
        // offline for a moment: try again on the next tick
      }
    }, Number(banner.dataset.pollMs) || 1500);
  };
  if (!banner.dataset.eventsUrl || typeof EventSource === "undefined") return poll();
  const source = new EventSource(banner.dataset.eventsUrl + "?from=" + banner.dataset.nextOffset);
  source.onmessage = (message) => {
    const event = JSON.parse(message.data);
    if (event.kind === "decision" && event.data.tool_call_id === banner.dataset.callId) {
      banner.hidden = false;
      source.close();
    }
  };
  source.addEventListener("end", () => source.close());
  source.addEventListener("unavailable", () => {
    source.close();
    poll();
  });
  // an error response closes the source for good: ask the call's state instead
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) poll();
  };
}

document.addEventListener("DOMContentLoaded", () => {
  startLiveRows();
  startLiveEvents();
  startSchemaCheck();
  startCallWatch();
});
