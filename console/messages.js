// /console/messages (the message list, GET /v1.0/messages) and /console/messages/<id> (one
// message with its payload and failure cause, GET /v1.0/message-instances/{id}).

import { api, instanceModels, query } from "./api.js";
import {
  add, empty, facts, field, h, json, label, loading, muted, pagination, problem, put, relative, replaceLast, section, table, when,
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

export async function messagesPage(view, ctx) {
  const state = ctx.search.get("state") || "";
  const type = ctx.search.get("message_type") || "";
  const name = ctx.search.get("name") || "";
  const page = Math.max(1, Number.parseInt(ctx.search.get("page") || "1", 10) || 1);
  const filtered = Boolean(state || type || name);

  const form = h(
    "form",
    { class: "wb-filters", role: "search", "aria-label": "Filter messages", action: "/console/messages" },
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
    h("button", { type: "submit", class: "wb-button wb-primary" }, "Apply"),
    filtered ? h("a", { href: "/console/messages", class: "wb-button wb-quiet" }, "Clear filters") : null,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    ctx.navigate(`/console/messages${query({ state: data.get("state"), message_type: data.get("message_type"), name: String(data.get("name") || "").trim() })}`);
  });

  const results = h("div", {}, loading("Loading messages…"));
  add(view,
    h("div", { class: "wb-title" }, h("h1", {}, "Messages")),
    h("p", { class: "wb-lead" }, "Messages sent to the service, and the messages instances wait for; newest first."),
    form,
    h(
      "details",
      { class: "wb-legend" },
      h("summary", {}, "What the states mean"),
      h("dl", {}, Object.entries(STATE_HELP).map(([s, text]) => h("div", {}, h("dt", {}, label("state", s)), h("dd", {}, text)))),
    ),
    results,
  );

  let answer;
  try {
    answer = await api(`/v1.0/messages${query({ state, message_type: type, name, page, per_page: PER_PAGE })}`);
  } catch (error) {
    if (!error.handled) put(results, problem(error));
    return;
  }
  if (!ctx.current()) return;
  if (!answer.results.length) {
    put(results,
      filtered || page > 1
        ? empty("No messages match these filters. ", h("a", { href: "/console/messages" }, "Show every message"), ".")
        : empty("No messages yet: messages appear here when a system POSTs to ", h("code", {}, "/v1.0/messages/{name}"), ", or when an instance waits for one."),
    );
    return;
  }
  const hrefFor = (p) => `/console/messages${query({ state, message_type: type, name, page: p })}`;
  put(results, messagesTable(answer.results), pagination(answer.pagination, page, hrefFor, "messages"));
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
