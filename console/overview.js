// /console/overview, the landing page: per model, instance counts by status (each a link to the
// filtered instance list), errors grouped by element and message, messages of the last hour
// and a chart of messages per minute by state (GET /v1.0/stats/overview, /v1.0/stats/messages).
// A token that reads no model's instances is sent to a page it can read.

import { api, apiFresh, modelSeg, query } from "./api.js";
import { stackedBarChart } from "./chart.js";
import { live, rerender } from "./live.js";
import { STATE_HELP } from "./messages.js";
import { add, empty, h, label, loading, muted, notice, problem, put, section, table, when } from "./ui.js";

const STATUSES = ["running", "waiting", "user_input_required", "suspended", "error", "complete", "terminated"];
const SEND_STATES = ["accepted", "buffered", "completed", "rejected"];
const STATE_NAMES = { accepted: "accepted", buffered: "buffered", completed: "completed", rejected: "rejected" };
const WINDOWS = { hour: "Last hour", day: "Last day" };
const number = (n) => Number(n || 0).toLocaleString("en");

const modelHref = (identifier) => `/console/models/${modelSeg(identifier)}/`;
const instancesHref = (model, status) => `/console/instances${query({ process_model_identifier: model, status })}`;

/** The overview without its timestamp: the page re-renders only when a number changed. */
const withoutTime = (answer) => JSON.stringify({ ...answer, generated_at: undefined });

export async function overviewPage(view, ctx) {
  let chartWindow = ctx.search.get("window") === "day" ? "day" : "hour";
  const body = h("div", { class: "wb-overview" }, loading("Loading the overview…"));
  const title = h("div", { class: "wb-title" }, h("h1", {}, "Overview"));
  add(view,
    title,
    h("p", { class: "wb-lead" }, "Instances by model and status, where they fail, and the messages of the last hour and day."),
    body,
  );

  let last = null;
  try {
    last = await apiFresh("/v1.0/stats/overview", null, withoutTime);
  } catch (error) {
    if (error.handled || !ctx.current()) return;
    if (error.status === 403) {
      await landElsewhere(ctx, body);
      return;
    }
    put(body, problem(error));
    return;
  }
  if (!ctx.current()) return;

  const countsBox = h("div", { id: "overview-models" });
  const errorsBox = h("div", { id: "overview-errors" });
  const messagesBox = h("div", { id: "overview-messages" });
  const chartBox = h("div", { id: "overview-chart" }, loading("Loading the chart…"));
  const generated = h("p", { class: "wb-help", id: "overview-generated" });
  const windowButtons = Object.entries(WINDOWS).map(([value, text]) => {
    const b = h("button", { type: "button", class: "wb-button wb-small", dataset: { window: value }, "aria-pressed": String(value === chartWindow) }, text);
    b.addEventListener("click", () => {
      if (chartWindow === value) return;
      chartWindow = value;
      for (const other of windowButtons) other.setAttribute("aria-pressed", String(other.dataset.window === value));
      const url = new URL(location.href);
      if (value === "hour") url.searchParams.delete("window");
      else url.searchParams.set("window", value);
      history.replaceState(history.state, "", url.pathname + url.search);
      lastChart = null;
      put(chartBox, loading("Loading the chart…"));
      refreshChart().catch(() => {});
    });
    return b;
  });
  const messagesSection = section("Messages", messagesBox);
  const chartSection = section(
    "Messages per minute",
    h("div", { class: "wb-diagram-bar" },
      h("p", { class: "wb-help wb-flush" }, "Messages sent, per minute of their arrival, by the state they are in now."),
      h("div", { class: "wb-zoom", role: "group", "aria-label": "Window" }, windowButtons)),
    chartBox,
  );
  let showMessages = last.data.messages != null;
  let lastChart = null;

  function renderOverview(data) {
    rerender(countsBox, () => put(countsBox, modelsTable(data)));
    rerender(errorsBox, () => put(errorsBox, errorsTable(data.errors || [])));
    if (data.messages) rerender(messagesBox, () => put(messagesBox, messagesSummary(data.messages)));
    put(generated, "Counted at ", when(data.generated_at), data.count_cap ? ` · counts stop at ${number(data.count_cap)} (shown as ${number(data.count_cap)}+)` : null);
  }

  async function refreshChart() {
    if (!showMessages) return;
    const asked = chartWindow;
    let answer;
    try {
      answer = await apiFresh(`/v1.0/stats/messages${query({ window: asked })}`, lastChart);
    } catch (error) {
      if (error.handled || !ctx.current()) return;
      if (error.status === 403 || error.status === 404) {
        // the token cannot read the messages (or the service has no chart): no chart, no error
        chartSection.remove();
        showMessages = false;
        return;
      }
      if (!lastChart) put(chartBox, problem(error));
      throw error;
    }
    if (!ctx.current() || asked !== chartWindow) return;
    lastChart = answer;
    if (!answer.changed && chartBox.querySelector(".wb-chart")) return;
    const stats = answer.data;
    rerender(chartBox, () =>
      put(
        chartBox,
        stackedBarChart({
          buckets: stats.buckets || [],
          keys: SEND_STATES,
          labels: STATE_NAMES,
          bucketSeconds: stats.bucket_seconds || 60,
          title: `Messages per minute, ${WINDOWS[asked].toLowerCase()}`,
          caption: stats.complete === false
            ? h("p", { class: "wb-help wb-diagram-warning" }, "Too many messages to count them all: the chart covers those since ", when(stats.counted_since), ".")
            : null,
        }),
      ),
    );
  }

  put(body,
    generated,
    section("Instances by model", countsBox),
    section("Errors", h("p", { class: "wb-help wb-flush" }, "Instances in error, grouped by the element and the message they failed with."), errorsBox),
    showMessages ? messagesSection : null,
    showMessages ? chartSection : null,
  );
  renderOverview(last.data);

  const updates = live(ctx, async () => {
    const answer = await apiFresh("/v1.0/stats/overview", last, withoutTime);
    if (!ctx.current()) return;
    last = answer;
    if (answer.changed) renderOverview(answer.data);
    await refreshChart();
  }, { interval: 5000 });
  add(title, updates.element);
  refreshChart().catch(() => {});
}

/** 403 on the overview: the token reads no model's instances. Go where it can read. */
async function landElsewhere(ctx, body) {
  try {
    await api(`/v1.0/process-models${query({ per_page: 1 })}`);
  } catch (error) {
    if (error.handled || !ctx.current()) return;
    put(body,
      h("div", { class: "wb-notice wb-notice-warn", role: "status", id: "overview-unreadable" },
        "Your token reads neither instances nor models, so the console has nothing to show it. ",
        "The overview needs ", h("code", {}, "instances:read:<model>"), " (or ", h("code", {}, "instances:read:*"),
        " for the messages), the models page ", h("code", {}, "models:read"), "."),
    );
    return;
  }
  if (!ctx.current()) return;
  ctx.navigate("/console/models", {
    replace: true,
    state: {
      flash: "Your token reads no model's instances, so there is no overview for it (it needs instances:read:<model>): here are the models it can read.",
      flashKind: "warn",
    },
  });
}

function count(model, status) {
  const n = (model.counts || {})[status] || 0;
  const capped = (model.capped || []).includes(status);
  const text = capped ? `${number(n)}+` : number(n);
  if (!n) return h("td", { class: "wb-num wb-count-zero", dataset: { status } }, muted("0"));
  return h(
    "td",
    { class: "wb-num", dataset: { status } },
    h("a", {
      href: instancesHref(model.process_model_identifier, status),
      class: `wb-count wb-count-${status}`,
      "aria-label": `${text} ${status.replace(/_/g, " ")} instances of ${model.process_model_identifier}`,
      title: capped ? `At least ${text}: counting stops there` : null,
    }, text),
  );
}

function modelsTable(data) {
  const models = data.models || [];
  if (!models.length) {
    return empty("No instances yet: an instance starts when a message reaches a model's message start event, or from a model's page (Start an instance).");
  }
  const counts = table(
    ["Model", ...STATUSES.map((s) => label("status", s)), ""],
    models.map((m) =>
      h(
        "tr",
        { dataset: { model: m.process_model_identifier } },
        h("th", { scope: "row" }, h("a", { href: modelHref(m.process_model_identifier) }, m.process_model_identifier)),
        STATUSES.map((s) => count(m, s)),
        h("td", {}, h("a", { href: instancesHref(m.process_model_identifier), "aria-label": `All instances of ${m.process_model_identifier}` }, "All")),
      ),
    ),
    { class: "wb-table wb-overview-models" },
  );
  return data.models_truncated
    ? h("div", {}, counts, h("p", { class: "wb-help" }, `The first ${models.length} models by identifier; more exist (their instances are in the instance list).`))
    : counts;
}

function errorsTable(errors) {
  if (!errors.length) return empty("No instance is in error.");
  return table(
    ["Model", "Element", "Error", "Instances"],
    errors.map((e) =>
      h(
        "tr",
        { dataset: { model: e.process_model_identifier, elementId: e.element_id } },
        h("td", {}, h("a", { href: modelHref(e.process_model_identifier) }, e.process_model_identifier)),
        h("td", {}, h("code", {}, e.element_id)),
        h("td", { class: "wb-error-text wb-wrap" }, e.message),
        h("td", { class: "wb-num" }, h("a", {
          href: instancesHref(e.process_model_identifier, "error"),
          "aria-label": `${e.count} instances of ${e.process_model_identifier} in error`,
        }, number(e.count))),
      ),
    ),
    { class: "wb-table wb-overview-errors" },
  );
}

function messagesSummary(messages) {
  const hour = messages.last_hour || {};
  const tile = (text, n, href, kind, help) =>
    h(
      "a",
      { class: `wb-tile wb-tile-${kind}${n ? "" : " wb-tile-zero"}`, href, title: help, dataset: { tile: kind } },
      h("span", { class: "wb-tile-number" }, number(n)),
      h("span", { class: "wb-tile-text" }, text),
    );
  return h(
    "div",
    {},
    h(
      "div",
      { class: "wb-tiles" },
      tile("buffered now", messages.buffered_now, `/console/messages${query({ state: "buffered" })}`, "buffered-now", STATE_HELP.buffered),
      SEND_STATES.map((s) => tile(`${s} in the last hour`, hour[s], `/console/messages${query({ state: s })}`, s, STATE_HELP[s])),
    ),
    (hour.buffered || 0) + (hour.rejected || 0)
      ? notice(`${number(hour.buffered || 0)} buffered and ${number(hour.rejected || 0)} rejected in the last hour: a message is buffered while nothing waits for it, rejected when nothing takes it.`, "warn")
      : null,
  );
}
