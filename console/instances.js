// /console/instances (GET /v1.0/process-instances) and /console/instances/<id>: the instance
// with its diagram (bpmn-js, waiting elements marked), tasks, data, messages, timers, connector
// logs and errors, and the actions its token allows (complete a task, suspend, resume,
// terminate, retry).

import { api, apiFresh, instanceModels, modelSeg, query, seg } from "./api.js";
import { LEGEND, autoLayoutNote, drawDiagram, setMarkers, warningsNote, zoomControls } from "./diagram.js";
import { live, rerender } from "./live.js";
import { correlationQuery, jsonObjectQuery, messagesTable } from "./messages.js";
import {
  add, confirmDialog, empty, facts, field, h, json, label, loading, messageOf, muted, notice, pagination, problem, put, relative, section, shortSha, table, typedObject, when,
} from "./ui.js";

const PER_PAGE = 25;
const STATUSES = ["running", "waiting", "user_input_required", "suspended", "error", "complete", "terminated"];
const STATUS_HELP = {
  running: "Running a step.",
  waiting: "Waiting for a message, a timer, a signal or a service call.",
  user_input_required: "Waiting for a person to complete a user or manual task.",
  suspended: "Suspended: nothing runs until it is resumed.",
  error: "Stopped on an error: fix the cause, then retry.",
  complete: "Finished.",
  terminated: "Terminated by an operator.",
};
const LIVE_TASK_STATES = ["READY", "WAITING", "STARTED"];
const COMPLETABLE_TYPES = ["userTask", "manualTask"];
const FINISHED = ["complete", "terminated"];

export function statusLabel(status) {
  const el = label("status", status);
  if (STATUS_HELP[status]) el.title = STATUS_HELP[status];
  return el;
}

function modelHref(identifier) {
  return `/console/models/${modelSeg(identifier)}/`;
}

function versionOf(instance) {
  return instance.model_version || instance.process_model_version || null;
}

const pad2 = (n) => String(n).padStart(2, "0");

/** An RFC 3339 time from the URL -> the value of a datetime-local input (local time). */
function localInput(value) {
  if (!value) return "";
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return "";
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}T${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
}

/** A datetime-local input's value -> RFC 3339 (UTC); "" for none; null when not a date. */
function rfc3339(value) {
  if (!value) return "";
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

const BULK = {
  retry: { text: "Retry", verb: "Retry", done: "retried" },
  suspend: { text: "Suspend", verb: "Suspend", done: "suspended" },
  resume: { text: "Resume", verb: "Resume", done: "resumed" },
  terminate: { text: "Terminate…", verb: "Terminate", done: "terminated", confirm: true },
  migrate: { text: "Migrate…", verb: "Migrate", done: "migrated", confirm: true },
};
const BULK_CAP = 500;

/** The instance list's filters, from the page's URL (`model` is an older name of the model's). */
function listFilters(search) {
  return {
    status: search.get("status") || "",
    process_model_identifier: search.get("process_model_identifier") || search.get("model") || "",
    correlation: search.get("correlation") || "",
    data: search.get("data") || "",
    created_after: search.get("created_after") || "",
    created_before: search.get("created_before") || "",
  };
}

export async function instancesPage(view, ctx) {
  const filters = listFilters(ctx.search);
  const { status, process_model_identifier: model } = filters;
  const page = Math.max(1, Number.parseInt(ctx.search.get("page") || "1", 10) || 1);
  const filtered = Object.values(filters).some(Boolean);

  const formError = h("p", { class: "wb-field-error", role: "alert", id: "filter-error" });
  const input = (name, attrs) => h("input", { name, id: `filter-${name.replace(/_/g, "-")}`, autocomplete: "off", spellcheck: "false", ...attrs });
  const correlationInput = input("correlation", { type: "search", value: filters.correlation, placeholder: "order_id=A-17" });
  const dataInput = input("data", { type: "search", value: filters.data, placeholder: "{\"customer\": \"ACME\"}", class: "wb-code" });
  const afterInput = input("created_after", { type: "datetime-local", value: localInput(filters.created_after) });
  const beforeInput = input("created_before", { type: "datetime-local", value: localInput(filters.created_before) });
  const form = h(
    "form",
    { class: "wb-search", role: "search", "aria-label": "Search instances", action: "/console/instances" },
    h(
      "div",
      { class: "wb-filters" },
      field(
        "Status",
        h(
          "select",
          { name: "status", id: "filter-status" },
          h("option", { value: "" }, "Any status"),
          STATUSES.map((s) => h("option", { value: s, selected: s === status }, s.replace(/_/g, " "))),
        ),
      ),
      field("Model", input("model", { type: "search", value: model, placeholder: "group/model" }), "wb-grow"),
      field("Correlation (key=value)", correlationInput, "wb-grow"),
      field("Data contains (JSON)", dataInput, "wb-grow"),
      field("Created from", afterInput),
      field("Created until", beforeInput),
      h("button", { type: "submit", class: "wb-button wb-primary" }, "Apply"),
      filtered ? h("a", { href: "/console/instances", class: "wb-button wb-quiet" }, "Clear filters") : null,
    ),
    formError,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    formError.textContent = "";
    const data = new FormData(form);
    const fail = (text, control) => {
      formError.textContent = text;
      control.focus();
    };
    const correlation = correlationQuery(data.get("correlation"));
    if (correlation === null) return fail("Search a correlation value as key=value, e.g. order_id=A-17.", correlationInput);
    const dataQuery = jsonObjectQuery(data.get("data"));
    if (dataQuery === null) return fail("Search the data with a JSON object, e.g. {\"customer\": \"ACME\"}.", dataInput);
    const after = rfc3339(data.get("created_after"));
    if (after === null) return fail("Give the start of the date range as a date and time.", afterInput);
    const before = rfc3339(data.get("created_before"));
    if (before === null) return fail("Give the end of the date range as a date and time.", beforeInput);
    if (after && before && after > before) return fail("The date range ends before it starts.", beforeInput);
    return ctx.navigate(`/console/instances${query({
      status: data.get("status"),
      process_model_identifier: String(data.get("model") || "").trim(),
      correlation,
      data: dataQuery,
      created_after: after,
      created_before: before,
    })}`);
  });

  const results = h("div", { id: "instance-results" }, loading("Loading instances…"));
  const bulkOut = h("div", { id: "bulk-result", "aria-live": "polite" });
  const title = h("div", { class: "wb-title" }, h("h1", {}, "Instances"));
  add(view,
    title,
    h("p", { class: "wb-lead" }, "Process instances, newest first. Select some (or all matching the search) to act on them at once."),
    form,
    results,
    bulkOut,
  );

  const path = `/v1.0/process-instances${query({ ...filters, page, per_page: PER_PAGE })}`;
  let last;
  try {
    last = await apiFresh(path);
  } catch (error) {
    if (!error.handled && ctx.current()) put(results, problem(error));
    return;
  }
  if (!ctx.current()) return;

  // the selection: ids on this page, or every instance matching the search (up to 500)
  const selected = new Set();
  let allMatching = false;
  let shown = [];
  let total = 0;
  let totalText = "0";

  const countText = h("span", { id: "bulk-count", role: "status" });
  const selectAllMatching = h("button", { type: "button", class: "wb-button wb-small", id: "bulk-all-matching" });
  const clearSelection = h("button", { type: "button", class: "wb-button wb-small wb-quiet", id: "bulk-clear" }, "Clear selection");
  const actionButtons = Object.entries(BULK).map(([action, { text }]) => {
    const b = h("button", { type: "button", class: `wb-button wb-small${action === "terminate" ? " wb-danger" : ""}`, dataset: { bulk: action } }, text);
    b.addEventListener("click", () => runBulk(action, b));
    return b;
  });
  const versionSelect = h("select", { id: "bulk-version", name: "target_version" }, h("option", { value: "" }, "each instance's own version"));
  const versionField = field("Retry and migrate on", versionSelect);
  versionField.hidden = true;
  if (model) {
    // one model: retry or migrate may move its instances to the model's newest version
    api(`/v1.0/process-models/${modelSeg(model)}`)
      .then((m) => {
        const version = m && (m.current_version || m.version_sha);
        if (!version || !ctx.current()) return;
        add(versionSelect, h("option", { value: version }, `the newest version (${version.slice(0, 10)})`));
        versionField.hidden = false;
      })
      .catch(() => {}); // no models:read: each instance keeps its version
  }
  const bulkBar = h(
    "div",
    { class: "wb-bulk", id: "bulk-bar", role: "group", "aria-label": "Act on the selected instances" },
    h("div", { class: "wb-actions" }, countText, selectAllMatching, clearSelection),
    h("div", { class: "wb-actions" }, actionButtons, versionField),
  );
  selectAllMatching.addEventListener("click", () => {
    allMatching = true;
    selected.clear();
    rerender(results, () => show(last.data));
  });
  clearSelection.addEventListener("click", () => {
    allMatching = false;
    selected.clear();
    rerender(results, () => show(last.data));
  });

  function updateBar() {
    const n = allMatching ? Math.min(total, BULK_CAP) : selected.size;
    if (allMatching) {
      put(countText, `All ${totalText} instances matching this search are selected`, total > BULK_CAP ? ` (an action takes the newest ${BULK_CAP})` : "", ".");
    } else {
      put(countText, selected.size ? `${selected.size} selected on this page.` : "Select instances to act on them.");
    }
    selectAllMatching.textContent = `Select all ${totalText} matching this search`;
    selectAllMatching.hidden = allMatching || total === 0;
    clearSelection.hidden = !n;
    for (const b of actionButtons) b.disabled = !n;
  }

  function row(i) {
    instanceModels.set(String(i.id), i.process_model_identifier);
    const box = h("input", {
      type: "checkbox",
      id: `select-${i.id}`,
      class: "wb-select",
      "aria-label": `Select instance #${i.id}`,
      checked: allMatching || selected.has(String(i.id)),
      disabled: allMatching,
    });
    box.addEventListener("change", () => {
      if (box.checked) selected.add(String(i.id));
      else selected.delete(String(i.id));
      const all = results.querySelector("#select-page");
      if (all) all.checked = shown.length > 0 && shown.every((x) => selected.has(String(x.id)));
      updateBar();
    });
    return h(
      "tr",
      { dataset: { instanceId: i.id, status: i.status } },
      h("td", { class: "wb-check" }, box),
      h("td", {}, h("a", { href: `/console/instances/${i.id}`, "aria-label": `Instance ${i.id}` }, `#${i.id}`)),
      h("td", {}, h("a", { href: modelHref(i.process_model_identifier) }, i.process_model_identifier)),
      h("td", {}, statusLabel(i.status)),
      h("td", {}, h("code", {}, i.process_id)),
      h("td", {}, shortSha(versionOf(i))),
      h("td", {}, when(i.created_at)),
      h("td", {}, when(i.updated_at)),
      h("td", { class: "wb-clip" }, i.error ? h("span", { class: "wb-error-text", title: i.error.message }, i.error.message) : muted("—")),
    );
  }

  const hrefFor = (p) => `/console/instances${query({ ...filters, page: p })}`;
  function show(answer) {
    shown = answer.results;
    const p = answer.pagination || {};
    total = p.total || 0;
    totalText = `${total.toLocaleString("en")}${p.total_exact === false ? "+" : ""}`;
    // what left this page (another status now, say) is no longer selected
    const visible = new Set(shown.map((i) => String(i.id)));
    for (const id of [...selected]) if (!visible.has(id)) selected.delete(id);
    updateBar();
    if (!shown.length) {
      put(results,
        filtered || page > 1
          ? empty("No instances match these filters. ", h("a", { href: "/console/instances" }, "Show every instance"), ".")
          : empty("No process instances yet: an instance starts when a message reaches a model's message start event (", h("code", {}, "POST /v1.0/messages/{name}"), "), or from a model's page (Start an instance)."),
      );
      return;
    }
    const all = h("input", {
      type: "checkbox",
      id: "select-page",
      "aria-label": "Select all on this page",
      title: "Select all on this page",
      checked: allMatching || shown.every((i) => selected.has(String(i.id))),
      disabled: allMatching,
    });
    all.addEventListener("change", () => {
      for (const i of shown) {
        if (all.checked) selected.add(String(i.id));
        else selected.delete(String(i.id));
      }
      for (const box of results.querySelectorAll("input.wb-select")) box.checked = all.checked;
      updateBar();
    });
    put(results,
      bulkBar,
      table([all, "Instance", "Model", "Status", "Process", "Version", "Created", "Updated", "Error"], shown.map(row), { class: "wb-table wb-instances" }),
      pagination(answer.pagination, page, hrefFor, "instances"),
    );
  }

  /** Every id matching the search (the newest 500), for "all matching this search". */
  async function matchingIds() {
    const answer = await api(`/v1.0/process-instances${query({ ...filters, page: 1, per_page: BULK_CAP })}`);
    const p = answer.pagination || {};
    return { ids: answer.results.map((i) => i.id), total: p.total || answer.results.length, exact: p.total_exact !== false };
  }

  async function runBulk(action, button) {
    const spec = BULK[action];
    put(bulkOut);
    let ids;
    let confirmText = null;
    try {
      if (allMatching) {
        const found = await matchingIds();
        if (!ctx.current()) return;
        ids = found.ids;
        if (!ids.length) {
          put(bulkOut, notice("No instance matches this search any more.", "warn"));
          return;
        }
        const more = found.total > ids.length
          ? ` Only the newest ${ids.length} of the ${found.total.toLocaleString("en")}${found.exact ? "" : "+"} matching are taken: one action takes at most ${BULK_CAP}.`
          : "";
        confirmText = `This acts on all ${ids.length} instances matching this search, each on its own.${more}`;
      } else {
        ids = [...selected].map(Number);
        if (spec.confirm) confirmText = `This acts on the ${ids.length} selected instances, each on its own.`;
      }
    } catch (error) {
      if (!error.handled && ctx.current()) put(bulkOut, problem(error));
      return;
    }
    if (!ids.length) return;
    const body = { action, process_instance_ids: ids };
    if ((action === "retry" || action === "migrate") && versionSelect.value) body.target_version = versionSelect.value;
    if (confirmText) {
      const where = body.target_version ? ` They move to version ${body.target_version.slice(0, 10)}.` : "";
      const ok = await confirmDialog({
        title: `${spec.verb} ${ids.length} instance${ids.length === 1 ? "" : "s"}?`,
        text: `${confirmText}${where}${action === "terminate" ? " Terminated instances stop for good." : ""}`,
        confirm: `${spec.verb} ${ids.length}`,
        cancel: "Cancel",
        danger: action === "terminate",
      });
      if (!ok || !ctx.current()) return;
    }
    for (const b of actionButtons) b.disabled = true;
    put(bulkOut, loading(`${spec.verb}: ${ids.length} instance${ids.length === 1 ? "" : "s"}…`));
    try {
      const answer = await bulkCall(body);
      if (!ctx.current()) return;
      selected.clear();
      allMatching = false;
      put(bulkOut, bulkResults(answer, spec));
      await updates.now();
    } catch (error) {
      if (error.handled || !ctx.current()) return;
      put(bulkOut, problem(error));
    } finally {
      if (ctx.current()) updateBar();
    }
    button.focus({ preventScroll: true });
  }

  show(last.data);
  const updates = live(ctx, async () => {
    const answer = await apiFresh(path, last);
    if (!ctx.current()) return;
    last = answer;
    if (answer.changed) rerender(results, () => show(answer.data));
  });
  add(title, updates.element);
}

/** POST /v1.0/bulk/process-instances: one call, an answer per instance. */
function bulkCall(body) {
  return api("/v1.0/bulk/process-instances", { method: "POST", body });
}

/** The answer of the bulk call: done or refused (why), per instance. */
function bulkResults(answer, spec) {
  const results = answer.results || [];
  const done = answer.done ?? results.filter((r) => r.outcome === "done").length;
  const refused = answer.refused ?? results.filter((r) => r.outcome !== "done").length;
  return section(
    `${spec.verb}: ${done} done, ${refused} refused`,
    table(
      ["Instance", "Outcome", "Status now, or why not"],
      results.map((r) =>
        h(
          "tr",
          { dataset: { instanceId: r.process_instance_id, outcome: r.outcome } },
          h("td", {}, h("a", { href: `/console/instances/${r.process_instance_id}` }, `#${r.process_instance_id}`)),
          h("td", {}, label("outcome", r.outcome)),
          h(
            "td",
            { class: "wb-wrap" },
            r.outcome === "done"
              ? (r.status ? statusLabel(r.status) : muted("—"))
              : h("span", {}, r.error_code ? h("code", {}, r.error_code) : null, r.error_code && r.detail ? ": " : "", r.detail || ""),
          ),
        ),
      ),
      { class: "wb-table wb-bulk-results", id: "bulk-results" },
    ),
  );
}

/** The instance: by the documented path when its model is known, else by id alone. */
async function loadInstance(id) {
  const model = instanceModels.get(id);
  if (model) {
    try {
      return await api(`/v1.0/process-instances/${modelSeg(model)}/${seg(id)}`);
    } catch (error) {
      if (error.status !== 404) throw error;
      instanceModels.delete(id);
    }
  }
  return api(`/v1.0/process-instances/${seg(id)}`);
}

/** The BPMN file holding the instance's process, at the instance's version. */
async function diagramSource(instance) {
  const model = instance.process_model_identifier;
  let file = instance.process_file_name;
  if (file === null && "process_file_name" in instance) {
    throw new Error("The model version this instance ran on is gone (its model was deleted): there is no diagram to draw.");
  }
  if (!file) {
    // older servers: the current version's summary names the file of each process
    const shown = await api(`/v1.0/process-models/${modelSeg(model)}`);
    const process = ((shown.summary && shown.summary.processes) || []).find((p) => p.id === instance.process_id);
    file = (process && process.file) || shown.primary_file_name;
  }
  if (!file) throw new Error("The service does not say which file holds this instance's process.");
  const version = versionOf(instance);
  const xml = await api(`/v1.0/process-models/${modelSeg(model)}/files/${seg(file)}${query({ version })}`);
  return { file, version, xml };
}

/** element id -> marker class: an error wins over waiting, waiting over completed. */
function markersOf(instance) {
  const rank = { "wb-completed": 1, "wb-current": 2, "wb-error": 3 };
  const markers = new Map();
  const mark = (id, cls) => {
    if (!id) return;
    const had = markers.get(id);
    if (!had || rank[cls] > rank[had]) markers.set(id, cls);
  };
  for (const task of instance.tasks || []) {
    if (LIVE_TASK_STATES.includes(task.state)) mark(task.element_id, "wb-current");
    else if (task.state === "COMPLETED") mark(task.element_id, "wb-completed");
    else if (task.state === "ERROR") mark(task.element_id, "wb-error");
  }
  if (instance.error && instance.status === "error") mark(instance.error.element_id, "wb-error");
  return markers;
}

export async function instanceDetailPage(view, ctx) {
  const id = ctx.params[0];
  let viewer = null;
  let drawn = null; // {key, markers} of the diagram on the page
  let drawing = null; // the key being drawn
  let last = null; // the instance as last fetched (apiFresh)
  let lastMessages = null;
  let lastLogs = null;
  const quiet = { messages: false, logs: false }; // refused (403/404): not asked again
  let instance = null;
  let tasks = [];
  let asked = 0; // fetches of the instance, numbered
  let shownAnswer = 0; // the number of the fetch on the page
  ctx.onLeave(() => viewer && viewer.destroy());

  // these survive the live refreshes: the diagram keeps its zoom, the lists their content
  const diagramBox = h("div", { class: "wb-diagram", id: "instance-diagram", "aria-label": "Process diagram" }, loading("Drawing the diagram…"));
  const diagramNote = h("div", { class: "wb-help" });
  const messagesBox = h("div", { id: "instance-messages" }, loading("Loading messages…"));
  const logsBox = h("div", { id: "instance-logs" }, loading("Loading connector logs…"));
  let updates = null;

  /** The instance by the documented path when its model is known, else by id alone. */
  async function fetchInstance(previous) {
    const model = instanceModels.get(id);
    if (model) {
      try {
        return await apiFresh(`/v1.0/process-instances/${modelSeg(model)}/${seg(id)}`, previous);
      } catch (error) {
        if (error.status !== 404) throw error;
        instanceModels.delete(id);
      }
    }
    return apiFresh(`/v1.0/process-instances/${seg(id)}`, previous);
  }

  function showError(error) {
    if (error.handled || !ctx.current()) return;
    put(view,
      crumbs(id),
      h("h1", {}, `Instance #${id}`),
      error.status === 404
        ? empty(`There is no instance #${id}, or your token may not see it. `, h("a", { href: "/console/instances" }, "Back to the instances"), ".")
        : problem(error),
    );
  }

  /** Fetch the instance now and show it (after an action, with `flash` saying what happened). */
  async function show(flash) {
    const mine = ++asked;
    let answer;
    try {
      answer = await fetchInstance(null);
    } catch (error) {
      showError(error);
      return;
    }
    if (!ctx.current() || mine < shownAnswer) return;
    shownAnswer = mine;
    last = answer;
    render(answer.data, flash);
    await refreshLists(true);
  }

  /** A live refresh: re-render only when the instance changed. */
  async function refresh() {
    if (!last) return;
    const mine = ++asked;
    const answer = await fetchInstance(last);
    // an answer older than one shown (an action's) is dropped
    if (!ctx.current() || mine < shownAnswer) return;
    shownAnswer = mine;
    last = answer;
    if (answer.changed) render(answer.data, null);
    await refreshLists(answer.changed);
  }

  function render(data, flash) {
    instance = data;
    instanceModels.set(id, instance.process_model_identifier);
    ctx.setTitle(`Instance #${id}`);
    tasks = [...(instance.tasks || [])].sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
    const live = tasks.filter((t) => LIVE_TASK_STATES.includes(t.state));
    const failedTasks = tasks.filter((t) => t.state === "ERROR");
    const finished = FINISHED.includes(instance.status);

    // what the operator typed into a task's form, and a notice still shown, outlive a refresh
    const typed = new Map();
    for (const area of view.querySelectorAll(".wb-complete-form textarea")) {
      typed.set(area.id, { value: area.value, start: area.selectionStart, end: area.selectionEnd });
    }
    const kept = flash ? null : view.querySelector(".wb-flash");
    if (flash) flash.classList.add("wb-flash");

    rerender(view, () =>
      put(view,
        crumbs(id),
        h(
          "div",
          { class: "wb-title" },
          h("h1", {}, `Instance #${instance.id}`),
          h("span", { id: "instance-status" }, statusLabel(instance.status)),
          updates ? updates.element : null,
        ),
        h(
          "p",
          { class: "wb-lead" },
          h("a", { href: modelHref(instance.process_model_identifier) }, instance.process_model_identifier),
          " · process ", h("code", {}, instance.process_id),
          " · version ", shortSha(versionOf(instance)),
          " · started ", when(instance.created_at),
          " · updated ", when(instance.updated_at),
        ),
        flash || kept,
        actionsBar(instance, finished),
        instance.error || failedTasks.length ? errorsSection(instance, failedTasks) : null,
        section(
          "Diagram",
          h(
            "div",
            { class: "wb-diagram-bar" },
            h("ul", { class: "wb-legend-inline", "aria-label": "Legend" }, LEGEND.map(([cls, text]) => h("li", {}, h("span", { class: `wb-swatch ${cls}` }), text))),
            zoomControls(() => viewer),
          ),
          diagramBox,
          diagramNote,
        ),
        waitingSection(instance, live, finished),
        section("Task history", tasksTable(tasks)),
        section(
          "Data",
          json(instance.data || {}),
          instance.data_objects && Object.keys(instance.data_objects).length
            ? h("div", {}, h("h3", {}, "Data objects"), json(instance.data_objects))
            : null,
          instance.correlations && Object.keys(instance.correlations).length
            ? h("div", {}, h("h3", {}, "Correlation values"), json(instance.correlations))
            : null,
        ),
        section("Messages", messagesBox),
        section("Pending timers", timersTable(instance.pending_timers || [])),
        section("Connector logs", logsBox),
      ),
    );
    for (const [areaId, { value, start, end }] of typed) {
      const area = document.getElementById(areaId);
      if (!area || area.value === value) continue;
      area.value = value;
      if (document.activeElement === area) area.setSelectionRange(start, end);
    }

    if (flash) {
      // the button that was pressed is gone: keyboard focus goes to what happened
      flash.setAttribute("tabindex", "-1");
      flash.focus();
    }
    drawOrMark();
  }

  /** Draw the instance's version once; later, only its markers change. */
  function drawOrMark() {
    const key = `${instance.process_model_identifier}|${instance.process_file_name}|${versionOf(instance)}|${instance.process_id}`;
    if (drawn && drawn.key === key) {
      if (viewer) {
        const markers = markersOf(instance);
        setMarkers(viewer, markers, drawn.markers);
        drawn.markers = markers;
      }
      return;
    }
    if (drawing === key) return; // the markers are set when it is drawn
    drawing = key;
    diagramSource(instance)
      .then(async ({ file, version, xml }) => {
        if (!ctx.current() || drawing !== key) return;
        if (viewer) {
          viewer.destroy();
          viewer = null;
        }
        const markers = markersOf(instance);
        const result = await drawDiagram(diagramBox, xml, markers);
        if (!ctx.current() || drawing !== key) {
          result.viewer.destroy();
          return;
        }
        viewer = result.viewer;
        drawn = { key, markers };
        // the instance may have moved on while it was drawn
        const now = markersOf(instance);
        setMarkers(viewer, now, markers);
        drawn.markers = now;
        put(
          diagramNote,
          h("p", { class: "wb-flush" }, "File ", h("code", {}, file), " at version ", shortSha(version), ". Drag to pan, scroll to zoom."),
          autoLayoutNote(result.autoLayout),
          warningsNote(result.warnings),
        );
      })
      .catch((error) => {
        if (error.handled || !ctx.current() || drawing !== key) return;
        drawn = { key, markers: new Map() };
        put(diagramBox, h("p", { class: "wb-empty" }, messageOf(error)));
      })
      .finally(() => {
        if (drawing === key) drawing = null;
      });
  }

  /** The instance's messages and connector logs, re-rendered when they (or the tasks) changed. */
  async function refreshLists(instanceChanged) {
    const messages = quiet.messages
      ? null
      : apiFresh(`/v1.0/messages${query({ process_instance_id: id, per_page: 100 })}`, lastMessages)
        .then((answer) => {
          if (!ctx.current()) return;
          const first = !lastMessages;
          lastMessages = answer;
          if (!answer.changed && !first) return;
          rerender(messagesBox, () => put(messagesBox,
            answer.data.results.length
              ? messagesTable(answer.data.results, { showInstance: false })
              : empty("No messages: this instance was not started by a message, waits for none and sent none."),
            answer.data.pagination && answer.data.pagination.total > answer.data.results.length
              ? h("p", { class: "wb-help" }, `The newest ${answer.data.results.length} of ${answer.data.pagination.total} messages.`)
              : null,
          ));
        })
        .catch((error) => listFailed(error, "messages", messagesBox, lastMessages));
    const logs = quiet.logs
      ? null
      : apiFresh(`/v1.0/process-instances/${seg(id)}/connector-logs`, lastLogs)
        .then((answer) => {
          if (!ctx.current()) return;
          const first = !lastLogs;
          lastLogs = answer;
          if (!answer.changed && !first && !instanceChanged) return;
          const lines = answer.data.results || [];
          rerender(logsBox, () => put(logsBox,
            lines.length
              ? table(
                  ["Time", "Task", "Line"],
                  lines.map((l) => [when(l.created_at), taskRef(tasks, l.task_guid), h("code", { class: "wb-log" }, l.line)]),
                )
              : empty("No connector logs: lines appear here when a service task's connector sends some."),
          ));
        })
        .catch((error) => listFailed(error, "logs", logsBox, lastLogs));
    await Promise.all([messages, logs]);
  }

  function listFailed(error, which, box, previous) {
    if (error.handled || !ctx.current()) return;
    if ([403, 404].includes(error.status)) quiet[which] = true;
    // said once: a list already shown stays as it was while the service cannot be reached
    if (!previous) put(box, problem(error));
  }

  function actionsBar(instance, finished) {
    const out = h("div", { class: "wb-action-result", "aria-live": "polite" });
    const act = async (action, button, doneText, body) => {
      button.disabled = true;
      put(out);
      try {
        const answer = await api(`/v1.0/process-instances/${seg(id)}/${action}`, { method: "POST", body });
        const status = answer && answer.process_instance && answer.process_instance.status;
        const text = action === "retry" && status === "error"
          ? `Instance #${id} was retried and failed again: see the error below.`
          : doneText;
        if (ctx.current()) await show(notice(text));
      } catch (error) {
        if (error.handled || !ctx.current()) return;
        button.disabled = false;
        put(out, problem(error));
      }
    };
    const button = (action, text, doneText, cls = "", body = undefined) => {
      const b = h("button", { type: "button", class: `wb-button ${cls}`, dataset: { action } }, text);
      b.addEventListener("click", () => act(action, b, doneText, body));
      return b;
    };
    const buttons = [];
    const s = instance.status;
    if (["running", "waiting", "user_input_required"].includes(s)) buttons.push(button("suspend", "Suspend", `Instance #${id} suspended: nothing runs until it is resumed.`));
    if (s === "suspended") buttons.push(button("resume", "Resume", `Instance #${id} resumed.`, "wb-primary"));
    if (s === "error") {
      buttons.push(button("retry", "Retry", `Instance #${id} retried.`, "wb-primary"));
      // a fix uploaded since the error: the failed task runs as the newest version has it
      const newer = h("span", { class: "wb-retry-newer" });
      buttons.push(newer);
      newestVersion(instance).then((version) => {
        if (!version || version === versionOf(instance) || !ctx.current()) return;
        put(newer, button(
          "retry",
          "Retry on the newest version",
          `Instance #${id} moved to version ${version.slice(0, 8)} and retried.`,
          "",
          { target_version: version },
        ));
        newer.lastChild.title = `Moves the instance to version ${version.slice(0, 8)} of its model (where the fix was uploaded), then runs the failed task again.`;
      });
    }
    if (!finished) {
      const terminate = h("button", { type: "button", class: "wb-button wb-danger", dataset: { action: "terminate" } }, "Terminate…");
      terminate.addEventListener("click", async () => {
        const ok = await confirmDialog({
          title: `Terminate instance #${id}?`,
          text: "It stops for good: its waiting tasks are cancelled and it will not run again. This cannot be undone.",
          confirm: "Terminate instance",
          cancel: "Keep it",
        });
        if (ok) await act("terminate", terminate, `Instance #${id} terminated.`);
      });
      buttons.push(terminate);
    }
    return h(
      "div",
      { class: "wb-toolbar" },
      buttons.length
        ? h("div", { class: "wb-actions", role: "group", "aria-label": "Instance actions" }, buttons)
        : h("p", { class: "wb-help" }, `This instance is ${instance.status}: there is nothing left to act on.`),
      out,
    );
  }

  /** The model's current version, or null when it cannot be read (no scope, deleted). */
  async function newestVersion(instance) {
    try {
      const model = await api(`/v1.0/process-models/${modelSeg(instance.process_model_identifier)}`);
      return (model && model.current_version) || null;
    } catch (error) {
      return null;
    }
  }

  function waitingSection(instance, live, finished) {
    if (finished || !live.length) {
      return section("Waiting", empty(finished ? "Nothing waits: the instance has finished." : "Nothing waits right now."));
    }
    return section(
      "Waiting",
      h(
        "div",
        { class: "wb-cards" },
        live.map((task) => {
          const completable = COMPLETABLE_TYPES.includes(task.element_type);
          return h(
            "div",
            { class: "wb-card", dataset: { taskGuid: task.guid, elementId: task.element_id } },
            h(
              "h3",
              {},
              task.name || task.element_id, " ",
              h("small", { class: "wb-muted" }, `${task.element_type} · ${task.state.toLowerCase()}`),
            ),
            completable
              ? completeForm(instance, task)
              : h("p", { class: "wb-help" }, waitText(task)),
          );
        }),
      ),
    );
  }

  function completeForm(instance, task) {
    const fieldId = `task-data-${task.guid}`;
    const error = h("p", { class: "wb-field-error", role: "alert" });
    const area = h("textarea", { id: fieldId, name: "data", rows: 4, spellcheck: "false", class: "wb-code" }, "{}");
    const submit = h("button", { type: "submit", class: "wb-button wb-primary" }, "Complete task");
    const form = h(
      "form",
      { class: "wb-form wb-complete-form", dataset: { taskGuid: task.guid } },
      h("label", { for: fieldId }, "Data to merge into the task data (a JSON object)"),
      area,
      error,
      h("div", { class: "wb-actions" }, submit),
    );
    if (instance.status === "suspended") {
      submit.disabled = true;
      error.textContent = "Resume the instance to complete its tasks.";
    }
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const body = typedObject(area, error, "The data", `{"approved": true}`);
      if (!body) return;
      submit.disabled = true;
      error.textContent = "";
      try {
        await api(`/v1.0/tasks/${seg(id)}/${seg(task.guid)}`, { method: "PUT", body });
        if (ctx.current()) await show(notice(`${task.name || task.element_id} completed.`));
      } catch (e) {
        if (e.handled || !ctx.current()) return;
        submit.disabled = false;
        error.textContent = messageOf(e);
      }
    });
    return form;
  }

  add(view, crumbs(id), loading("Loading the instance…"));
  updates = live(ctx, refresh);
  await show(null);
}

function crumbs(id) {
  return h("p", { class: "wb-crumbs" }, h("a", { href: "/console/instances" }, "Instances"), " / ", `#${id}`);
}

function waitText(task) {
  switch (task.element_type) {
    case "serviceTask":
      return task.retry_at
        ? `Calling its connector again ${relative(task.retry_at)} (attempt ${task.retries_attempted + 1}).`
        : "Waiting for its connector's answer or callback.";
    case "receiveTask":
    case "intermediateCatchEvent":
      return "Waiting for a message, a timer, a signal or a condition (see the messages and pending timers below).";
    case "boundaryEvent":
      return "Waiting on its activity for its trigger.";
    default:
      return "Waiting.";
  }
}

function taskRef(tasks, guid) {
  const task = tasks.find((t) => t.guid === guid);
  return h("span", { title: guid }, task ? task.name || task.element_id : h("code", {}, String(guid).slice(0, 8)));
}

function tasksTable(tasks) {
  if (!tasks.length) return empty("No tasks recorded.");
  return table(
    ["Element", "Type", "State", "Created", "Updated", "Task"],
    tasks.map((t) =>
      h(
        "tr",
        { dataset: { elementId: t.element_id, taskState: t.state } },
        h("td", {}, t.name ? h("span", {}, t.name, " ", h("code", { class: "wb-muted" }, t.element_id)) : h("code", {}, t.element_id)),
        h("td", {}, t.element_type),
        h("td", {}, label("task", t.state.toLowerCase())),
        h("td", {}, when(t.created_at)),
        h("td", {}, when(t.updated_at)),
        h("td", {}, h("code", { class: "wb-guid" }, t.guid)),
      ),
    ),
    { class: "wb-table wb-tasks" },
  );
}

function timersTable(timers) {
  if (!timers.length) return empty("No pending timers.");
  return table(
    ["Element", "Due", ""],
    timers.map((t) => [h("code", {}, t.element_id), when(t.due_at), muted(relative(t.due_at))]),
  );
}

function errorsSection(instance, failedTasks) {
  const e = instance.error;
  return section(
    "Errors",
    e
      ? h(
          "div",
          { class: "wb-notice wb-notice-error", id: "instance-error" },
          h("strong", {}, "The instance stopped: "),
          e.message,
          facts([
            ["Element", h("code", {}, e.element_id)],
            ["Code", e.error_code ? h("code", {}, e.error_code) : null],
            ["File", e.file ? h("code", {}, e.file) : null],
          ]),
        )
      : null,
    failedTasks.length
      ? table(
          ["Element", "Error"],
          failedTasks.map((t) => [
            h("code", {}, t.element_id),
            t.data ? h("span", {}, t.data.error_code ? h("code", {}, t.data.error_code) : null, " ", t.data.message || JSON.stringify(t.data)) : muted("—"),
          ]),
        )
      : null,
  );
}
