// /console/messages (the message list, GET /v1.0/messages) and /console/messages/<id> (one
// message with its payload and failure cause, GET /v1.0/message-instances/{id}).

import { api, apiFresh, instanceModels, query } from "./api.js";
import { live, rerender } from "./live.js";
import {
  add, empty, facts, field, h, json, label, loading, messageOf, muted, notice, pagination, problem, put, relative, replaceLast, section, table, typedObject, when,
} from "./ui.js";

const PER_PAGE = 25;

/** What each state means, in words (tooltips, the legend). */
export const STATE_HELP = {
  accepted: "Sent and taken: delivery is in progress.",
  buffered: "Sent while nothing waited for it: kept for a receiver until it expires.",
  completed: "Correlated with a waiting instance, or started one.",
  rejected: "Not accepted (no receiver, no matching correlation), failed, or expired while buffered.",
  waiting: "An instance waits for this message.",
  cancelled: "An instance stopped waiting for this message.",
};
const SEND_STATES = ["accepted", "buffered", "completed", "rejected"];
const RECEIVE_STATES = ["waiting", "completed", "cancelled"];

/** The message's state (`state` from the API; derived from `status` by older servers). */
export function messageState(message) {
  if (message.state) return message.state;
  const receive = message.message_type === "receive";
  switch (message.status) {
    case "ready":
      return receive ? "waiting" : "buffered";
    case "running":
      return receive ? "waiting" : "accepted";
    case "completed":
      return "completed";
    default:
      return receive ? "cancelled" : "rejected";
  }
}

export function stateLabel(message) {
  const state = messageState(message);
  const el = label("state", state);
  if (STATE_HELP[state]) el.title = STATE_HELP[state];
  return el;
}

/** `{"order_id":42}` -> "order_id: 42"; "{}" -> none. */
function correlation(message) {
  let values = message.correlation_keys;
  if (!values) {
    try {
      values = JSON.parse(message.correlation_key || "{}");
    } catch {
      return h("code", {}, message.correlation_key);
    }
  }
  const entries = values && typeof values === "object" ? Object.entries(values) : [];
  if (!entries.length) return muted("none");
  return h(
    "span",
    { class: "wb-keys" },
    entries.map(([key, value]) =>
      h("code", {}, `${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`),
    ),
    message.truncated ? "…" : null,
  );
}

function instanceLink(message) {
  if (message.process_instance_id == null) return muted("—");
  if (message.process_model_identifier) {
    instanceModels.set(String(message.process_instance_id), message.process_model_identifier);
  }
  return h("a", { href: `/console/instances/${message.process_instance_id}` }, `#${message.process_instance_id}`);
}

function expiry(message) {
  if (!message.expires_at) return muted("—");
  return h("span", {}, when(message.expires_at), h("br"), h("small", { class: "wb-muted" }, relative(message.expires_at)));
}

/** The table rows of a page of messages (also used on the instance page). */
export function messagesTable(messages, { showInstance = true } = {}) {
  const headings = ["Message", "State", "Type", "Name", "Correlation keys"];
  if (showInstance) headings.push("Instance");
  headings.push("Created", "Expires");
  return table(
    headings,
    messages.map((m) =>
      h(
        "tr",
        { dataset: { messageId: m.id, messageName: m.name, state: messageState(m) } },
        h("td", {}, h("a", { href: `/console/messages/${m.id}`, "aria-label": `Message ${m.id}: ${m.name}` }, `#${m.id}`)),
        h("td", {}, stateLabel(m)),
        h("td", {}, m.message_type),
        h("td", { class: "wb-name" }, m.name),
        h("td", {}, correlation(m)),
        showInstance ? h("td", {}, instanceLink(m)) : null,
        h("td", {}, when(m.created_at)),
        h("td", {}, expiry(m)),
      ),
    ),
    { class: "wb-table wb-messages" },
  );
}

function selectField(name, text, options, value) {
  return field(
    text,
    h(
      "select",
      { name, id: `filter-${name}` },
      options.map(([optionValue, optionText]) =>
        h("option", { value: optionValue, selected: optionValue === value }, optionText),
      ),
    ),
  );
}

/** `order_id = A-17` -> `order_id=A-17`; null when it is not key=value. */
export function correlationQuery(text) {
  const value = String(text || "").trim();
  if (!value) return "";
  const at = value.indexOf("=");
  if (at < 1) return null;
  const key = value.slice(0, at).trim();
  const rest = value.slice(at + 1).trim();
  return key ? `${key}=${rest}` : null;
}

/** A JSON object typed by hand, compacted; "" for none; null when it is not a JSON object. */
export function jsonObjectQuery(text) {
  const value = String(text || "").trim();
  if (!value) return "";
  try {
    const parsed = JSON.parse(value);
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? JSON.stringify(parsed) : null;
  } catch {
    return null;
  }
}

/** A random (version 4) UUID, also where crypto.randomUUID is missing (plain http). */
export function uuid4() {
  if (window.crypto && typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map((n) => n.toString(16).padStart(2, "0")).join("");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/**
 * "Send a message": name, JSON payload, optional time to live (with a generated
 * message_instance_uuid, kept for a second try of the same message so it is never delivered
 * twice). `onSent` runs after an answer.
 */
export function sendMessageForm(onSent = () => {}, { name: fixedName = "" } = {}) {
  const nameInput = h("input", { type: "text", id: "send-name", name: "name", required: true, autocomplete: "off", value: fixedName, placeholder: "order placed" });
  const payload = h("textarea", { id: "send-payload", name: "payload", rows: 4, spellcheck: "false", class: "wb-code" }, "{}");
  const ttl = h("input", { type: "number", id: "send-ttl", name: "ttl", min: "0", max: "300", step: "1", inputmode: "numeric", placeholder: "none", "aria-describedby": "send-ttl-help" });
  const error = h("p", { class: "wb-field-error", role: "alert" });
  const result = h("div", { class: "wb-send-result", "aria-live": "polite" });
  const submit = h("button", { type: "submit", class: "wb-button wb-primary" }, "Send message");
  let pendingUuid = null; // the key of a send whose answer did not arrive: reused on a retry
  const form = h(
    "form",
    { class: "wb-form wb-send-form", id: "send-message-form", "aria-label": "Send a message", novalidate: true },
    h("div", { class: "wb-filters" }, field("Message name", nameInput, "wb-grow"), field("Time to live (seconds, optional)", ttl)),
    h("label", { for: "send-payload" }, "Payload (a JSON object)"),
    payload,
    h("p", { class: "wb-help", id: "send-ttl-help" },
      "With a time to live (up to 300 s), a message nothing waits for yet is buffered that long, and is sent with a generated ",
      h("code", {}, "message_instance_uuid"), " so that sending it again never delivers it twice."),
    error,
    h("div", { class: "wb-actions" }, submit),
    result,
  );
  for (const input of [nameInput, payload, ttl]) input.addEventListener("input", () => (pendingUuid = null));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    const name = nameInput.value.trim();
    if (!name) {
      error.textContent = "Give the message's name.";
      nameInput.focus();
      return;
    }
    const body = typedObject(payload, error, "The payload", `{"order_id": "A-17"}`);
    if (!body) return;
    const ttlText = ttl.value.trim();
    const seconds = Number(ttlText);
    if (ttlText && (!Number.isInteger(seconds) || seconds < 0 || seconds > 300)) {
      error.textContent = "The time to live is a whole number of seconds from 0 to 300.";
      ttl.focus();
      return;
    }
    const params = {};
    if (ttlText) {
      pendingUuid = pendingUuid || uuid4();
      params.time_to_live_in_seconds = seconds;
      params.message_instance_uuid = pendingUuid;
    }
    submit.disabled = true;
    put(result);
    const sentTo = `/console/messages${query({ name })}`;
    try {
      const response = await api(`/v1.0/messages/${encodeURIComponent(name)}${query(params)}`, { method: "POST", body, raw: true });
      const answer = await response.json();
      pendingUuid = null;
      put(result, sentNotice(response.status, answer, name, sentTo));
    } catch (e) {
      if (e.handled) return;
      if (e.status) pendingUuid = null; // answered: a new send gets a new key
      put(result,
        h("div", { class: "wb-notice wb-notice-error", role: "alert" },
          messageOf(e),
          e.code === "message_not_accepted" ? h("span", {}, " It is kept as a rejected message: ", h("a", { href: sentTo }, "see the messages named ", name), ".") : null),
      );
    } finally {
      submit.disabled = false;
      onSent();
    }
  });
  return form;
}

function sentNotice(status, answer, name, sentTo) {
  const instance = answer && answer.process_instance;
  const message = answer && answer.message_instance;
  if (instance) {
    if (instance.process_model_identifier) instanceModels.set(String(instance.id), instance.process_model_identifier);
    return h("div", { class: "wb-notice wb-notice-ok", role: "status", id: "send-result" },
      `Message “${name}” delivered: instance `,
      h("a", { href: `/console/instances/${instance.id}`, id: "send-result-instance" }, `#${instance.id}`),
      ` of ${instance.process_model_identifier} is now `, label("status", instance.status), ". ",
      h("a", { href: sentTo }, "The messages named so"), ".");
  }
  if (message) {
    return h("div", { class: "wb-notice wb-notice-ok", role: "status", id: "send-result" },
      `Message “${name}” `, label("state", messageState(message)), " as ",
      h("a", { href: `/console/messages/${message.id}`, id: "send-result-message" }, `message #${message.id}`),
      message.expires_at ? h("span", {}, " until ", when(message.expires_at)) : null,
      ": nothing waits for it yet.");
  }
  return notice(`Message “${name}” sent (the service answered ${status}).`);
}

export async function messagesPage(view, ctx) {
  const state = ctx.search.get("state") || "";
  const type = ctx.search.get("message_type") || "";
  const name = ctx.search.get("name") || "";
  const correlation = ctx.search.get("correlation") || "";
  const payloadFilter = ctx.search.get("payload") || "";
  const page = Math.max(1, Number.parseInt(ctx.search.get("page") || "1", 10) || 1);
  const filters = { state, message_type: type, name, correlation, payload: payloadFilter };
  const filtered = Object.values(filters).some(Boolean);

  const formError = h("p", { class: "wb-field-error", role: "alert", id: "filter-error" });
  const correlationInput = h("input", { name: "correlation", id: "filter-correlation", type: "search", value: correlation, placeholder: "order_id=A-17", autocomplete: "off", spellcheck: "false" });
  const payloadInput = h("input", { name: "payload", id: "filter-payload", type: "search", value: payloadFilter, placeholder: "{\"order_id\": \"A-17\"}", autocomplete: "off", spellcheck: "false", class: "wb-code" });
  const form = h(
    "form",
    { class: "wb-search", role: "search", "aria-label": "Search messages", action: "/console/messages" },
    h(
      "div",
      { class: "wb-filters" },
      selectField(
        "state",
        "State",
        [
          ["", "Any state"],
          ...SEND_STATES.map((s) => [s, s]),
          ...RECEIVE_STATES.filter((s) => s !== "completed").map((s) => [s, s]),
        ],
        state,
      ),
      selectField("message_type", "Type", [["", "Send and receive"], ["send", "send"], ["receive", "receive"]], type),
      field(
        "Name",
        h("input", { name: "name", id: "filter-name", type: "search", value: name, placeholder: "exact message name", autocomplete: "off" }),
        "wb-grow",
      ),
      field("Correlation (key=value)", correlationInput, "wb-grow"),
      field("Payload contains (JSON)", payloadInput, "wb-grow"),
      h("button", { type: "submit", class: "wb-button wb-primary" }, "Apply"),
      filtered ? h("a", { href: "/console/messages", class: "wb-button wb-quiet" }, "Clear filters") : null,
    ),
    formError,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    formError.textContent = "";
    const data = new FormData(form);
    const c = correlationQuery(data.get("correlation"));
    if (c === null) {
      formError.textContent = "Search a correlation value as key=value, e.g. order_id=A-17.";
      correlationInput.focus();
      return;
    }
    const p = jsonObjectQuery(data.get("payload"));
    if (p === null) {
      formError.textContent = "Search the payload with a JSON object, e.g. {\"order_id\": \"A-17\"}.";
      payloadInput.focus();
      return;
    }
    ctx.navigate(`/console/messages${query({ state: data.get("state"), message_type: data.get("message_type"), name: String(data.get("name") || "").trim(), correlation: c, payload: p })}`);
  });

  const results = h("div", { id: "message-results" }, loading("Loading messages…"));
  const title = h("div", { class: "wb-title" }, h("h1", {}, "Messages"));
  let updates = null;
  add(view,
    title,
    h("p", { class: "wb-lead" }, "Messages sent to the service, and the messages instances wait for; newest first."),
    h(
      "details",
      { class: "wb-panel", id: "send-message" },
      h("summary", {}, "Send a message"),
      sendMessageForm(() => updates && updates.now()),
    ),
    form,
    h(
      "details",
      { class: "wb-legend" },
      h("summary", {}, "What the states mean"),
      h("dl", {}, Object.entries(STATE_HELP).map(([s, text]) => h("div", {}, h("dt", {}, label("state", s)), h("dd", {}, text)))),
    ),
    results,
  );

  const path = `/v1.0/messages${query({ ...filters, page, per_page: PER_PAGE })}`;
  let last = null;
  try {
    last = await apiFresh(path);
  } catch (error) {
    if (!error.handled && ctx.current()) put(results, problem(error));
    return;
  }
  if (!ctx.current()) return;
  const hrefFor = (p) => `/console/messages${query({ ...filters, page: p })}`;
  const show = (answer) => {
    if (!answer.results.length) {
      put(results,
        filtered || page > 1
          ? empty("No messages match these filters. ", h("a", { href: "/console/messages" }, "Show every message"), ".")
          : empty("No messages yet: messages appear here when a system POSTs to ", h("code", {}, "/v1.0/messages/{name}"), ", or when an instance waits for one."),
      );
      return;
    }
    put(results, messagesTable(answer.results), pagination(answer.pagination, page, hrefFor, "messages"));
  };
  show(last.data);
  updates = live(ctx, async () => {
    const answer = await apiFresh(path, last);
    if (!ctx.current()) return;
    last = answer;
    if (answer.changed) rerender(results, () => show(answer.data));
  });
  add(title, updates.element);
}

export async function messageDetailPage(view, ctx) {
  const id = ctx.params[0];
  add(view,
    h("p", { class: "wb-crumbs" }, h("a", { href: "/console/messages" }, "Messages"), " / ", `#${id}`),
    loading("Loading the message…"),
  );
  let m;
  try {
    m = await api(`/v1.0/message-instances/${encodeURIComponent(id)}`);
  } catch (error) {
    if (error.handled) return;
    replaceLast(view,
      h("h1", {}, `Message #${id}`),
      error.status === 404 ? empty(`There is no message #${id}.`, " ", h("a", { href: "/console/messages" }, "Back to the messages"), ".") : problem(error),
    );
    return;
  }
  if (!ctx.current()) return;
  ctx.setTitle(`Message #${m.id}`);
  const state = messageState(m);
  const failed = m.failure_cause || m.failure_reason;
  replaceLast(view,
    h("div", { class: "wb-title" }, h("h1", {}, m.name), stateLabel(m)),
    h("p", { class: "wb-lead" }, `Message #${m.id}, a ${m.message_type}. `, STATE_HELP[state] || ""),
    failed
      ? h(
          "div",
          { class: "wb-notice wb-notice-error", id: "failure-cause" },
          h("strong", {}, "Why it was not taken: "),
          m.failure_cause || "",
          m.failure_reason ? h("span", {}, " (", h("code", {}, m.failure_reason), ")") : null,
        )
      : null,
    section(
      "Details",
      facts([
        ["State", stateLabel(m)],
        ["Status (engine)", h("code", {}, m.status)],
        ["Type", m.message_type],
        ["Name", m.name],
        ["Correlation keys", correlation(m)],
        ["Instance", m.process_instance_id != null ? instanceLink(m) : muted("none")],
        ["Model", m.process_model_identifier ? h("a", { href: `/console/models/${m.process_model_identifier.replace(/\//g, ":")}/` }, m.process_model_identifier) : null],
        ["Task", m.task_guid ? h("code", {}, m.task_guid) : null],
        [m.message_type === "send" ? "Received by" : "Got", m.counterpart_id != null ? h("a", { href: `/console/messages/${m.counterpart_id}` }, `message #${m.counterpart_id}`) : null],
        ["Sent by", m.created_by],
        ["Idempotency key", m.message_instance_uuid ? h("code", {}, m.message_instance_uuid) : null],
        ["Created", when(m.created_at)],
        ["Updated", when(m.updated_at)],
        ["Expires", m.expires_at ? h("span", {}, when(m.expires_at), " ", muted(`(${relative(m.expires_at)})`)) : null],
      ]),
    ),
    section(
      "Payload",
      m.payload == null
        ? empty(m.message_type === "receive" ? "A receive has no payload: it is the wait of an instance." : "No payload was kept.")
        : json(m.payload),
    ),
  );
}
