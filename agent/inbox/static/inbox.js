// The inbox's only script (no third-party code): live rows on the waiting list, and a check of
// the Modify editor's JSON against the tool's schema before the form is sent. The run's Update
// validator checks the arguments again; this check only saves a round trip.
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

// On a call page: tell the person when someone else has decided the call meanwhile.
function startCallWatch() {
  const banner = document.getElementById("decided-elsewhere");
  if (!banner) return;
  const every = Number(banner.dataset.pollMs) || 1500;
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
  }, every);
}

document.addEventListener("DOMContentLoaded", () => {
  startLiveRows();
  startSchemaCheck();
  startCallWatch();
});
