// /console/instances (GET /v1.0/process-instances) and /console/instances/<id>: the instance
// with its diagram (bpmn-js, waiting elements marked), tasks, data, messages, timers, connector
// logs and errors, and the actions its token allows (complete a task, suspend, resume,
// terminate, retry).

import { api, instanceModels, modelSeg, query, seg } from "./api.js";
import { LEGEND, autoLayoutNote, drawDiagram, warningsNote, zoomControls } from "./diagram.js";
import { messagesTable } from "./messages.js";
import {
  add, confirmDialog, empty, facts, field, h, json, label, loading, messageOf, muted, notice, pagination, problem, put, relative, section, shortSha, table, when,
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

export async function instancesPage(view, ctx) {
  const status = ctx.search.get("status") || "";
  const model = ctx.search.get("model") || ctx.search.get("process_model_identifier") || "";
  const page = Math.max(1, Number.parseInt(ctx.search.get("page") || "1", 10) || 1);
  const filtered = Boolean(status || model);

  const form = h(
    "form",
    { class: "wb-filters", role: "search", "aria-label": "Filter instances", action: "/console/instances" },
    field(
      "Status",
      h(
        "select",
        { name: "status", id: "filter-status" },
        h("option", { value: "" }, "Any status"),
        STATUSES.map((s) => h("option", { value: s, selected: s === status }, s.replace(/_/g, " "))),
      ),
    ),
    field(
      "Model",
      h("input", { name: "model", id: "filter-model", type: "search", value: model, placeholder: "group/model", autocomplete: "off" }),
      "wb-grow",
    ),
    h("button", { type: "submit", class: "wb-button wb-primary" }, "Apply"),
    filtered ? h("a", { href: "/console/instances", class: "wb-button wb-quiet" }, "Clear filters") : null,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    ctx.navigate(`/console/instances${query({ status: data.get("status"), model: String(data.get("model") || "").trim() })}`);
  });

  const results = h("div", {}, loading("Loading instances…"));
  add(view,
    h("div", { class: "wb-title" }, h("h1", {}, "Instances")),
    h("p", { class: "wb-lead" }, "Process instances, newest first."),
    form,
    results,
  );
  let answer;
  try {
    answer = await api(`/v1.0/process-instances${query({ status, process_model_identifier: model, page, per_page: PER_PAGE })}`);
  } catch (error) {
    if (!error.handled) put(results, problem(error));
    return;
  }
  if (!ctx.current()) return;
  if (!answer.results.length) {
    put(results,
      filtered || page > 1
        ? empty("No instances match these filters. ", h("a", { href: "/console/instances" }, "Show every instance"), ".")
        : empty("No process instances yet: an instance starts when a message reaches a model's message start event (", h("code", {}, "POST /v1.0/messages/{name}"), "), or with ", h("code", {}, "POST /v1.0/process-instances/{model}"), "."),
    );
    return;
  }
  const rows = answer.results.map((i) => {
    instanceModels.set(String(i.id), i.process_model_identifier);
    return h(
      "tr",
      { dataset: { instanceId: i.id, status: i.status } },
      h("td", {}, h("a", { href: `/console/instances/${i.id}`, "aria-label": `Instance ${i.id}` }, `#${i.id}`)),
      h("td", {}, h("a", { href: modelHref(i.process_model_identifier) }, i.process_model_identifier)),
      h("td", {}, statusLabel(i.status)),
      h("td", {}, h("code", {}, i.process_id)),
      h("td", {}, shortSha(versionOf(i))),
      h("td", {}, when(i.created_at)),
      h("td", {}, when(i.updated_at)),
      h("td", { class: "wb-clip" }, i.error ? h("span", { class: "wb-error-text", title: i.error.message }, i.error.message) : muted("—")),
    );
  });
  const hrefFor = (p) => `/console/instances${query({ status, model, page: p })}`;
  put(results,
    table(["Instance", "Model", "Status", "Process", "Version", "Created", "Updated", "Error"], rows, { class: "wb-table wb-instances" }),
    pagination(answer.pagination, page, hrefFor, "instances"),
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
  ctx.onLeave(() => viewer && viewer.destroy());

  async function show(flash) {
    let instance;
    try {
      instance = await loadInstance(id);
    } catch (error) {
      if (error.handled || !ctx.current()) return;
      put(view,
        crumbs(id),
        h("h1", {}, `Instance #${id}`),
        error.status === 404
          ? empty(`There is no instance #${id}, or your token may not see it. `, h("a", { href: "/console/instances" }, "Back to the instances"), ".")
          : problem(error),
      );
      return;
    }
    if (!ctx.current()) return;
    instanceModels.set(id, instance.process_model_identifier);
    ctx.setTitle(`Instance #${id}`);
    if (viewer) {
      viewer.destroy();
      viewer = null;
    }

    const tasks = [...(instance.tasks || [])].sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
    const live = tasks.filter((t) => LIVE_TASK_STATES.includes(t.state));
    const failedTasks = tasks.filter((t) => t.state === "ERROR");
    const finished = FINISHED.includes(instance.status);

    const diagramBox = h("div", { class: "wb-diagram", id: "instance-diagram", "aria-label": "Process diagram" }, loading("Drawing the diagram…"));
    const diagramNote = h("p", { class: "wb-help" });
    const messagesBox = h("div", {}, loading("Loading messages…"));
    const logsBox = h("div", {}, loading("Loading connector logs…"));

    put(view,
      crumbs(id),
      h(
        "div",
        { class: "wb-title" },
        h("h1", {}, `Instance #${instance.id}`),
        h("span", { id: "instance-status" }, statusLabel(instance.status)),
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
      flash || null,
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
    );

    if (flash) {
      // the button that was pressed is gone: keyboard focus goes to what happened
      flash.setAttribute("tabindex", "-1");
      flash.focus();
    }

    diagramSource(instance)
      .then(async ({ file, version, xml }) => {
        if (!ctx.current()) return;
        const drawn = await drawDiagram(diagramBox, xml, markersOf(instance));
        if (!ctx.current() || !diagramBox.isConnected) {
          drawn.viewer.destroy();
          return;
        }
        viewer = drawn.viewer;
        put(
          diagramNote,
          "File ", h("code", {}, file), " at version ", shortSha(version), ". Drag to pan, scroll to zoom.",
          autoLayoutNote(drawn.autoLayout),
          warningsNote(drawn.warnings),
        );
      })
      .catch((error) => {
        if (error.handled || !ctx.current()) return;
        put(diagramBox, h("p", { class: "wb-empty" }, messageOf(error)));
      });

    api(`/v1.0/messages${query({ process_instance_id: id, per_page: 100 })}`)
      .then((answer) => {
        if (!ctx.current()) return;
        put(messagesBox,
          answer.results.length
            ? messagesTable(answer.results, { showInstance: false })
            : empty("No messages: this instance was not started by a message, waits for none and sent none."),
          answer.pagination && answer.pagination.total > answer.results.length
            ? h("p", { class: "wb-help" }, `The newest ${answer.results.length} of ${answer.pagination.total} messages.`)
            : null,
        );
      })
      .catch((error) => !error.handled && ctx.current() && put(messagesBox, problem(error)));

    api(`/v1.0/process-instances/${seg(id)}/connector-logs`)
      .then((answer) => {
        if (!ctx.current()) return;
        const lines = answer.results || [];
        put(logsBox,
          lines.length
            ? table(
                ["Time", "Task", "Line"],
                lines.map((l) => [when(l.created_at), taskRef(tasks, l.task_guid), h("code", { class: "wb-log" }, l.line)]),
              )
            : empty("No connector logs: lines appear here when a service task's connector sends some."),
        );
      })
      .catch((error) => !error.handled && ctx.current() && put(logsBox, problem(error)));
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
      let body;
      try {
        body = JSON.parse(area.value.trim() || "{}");
      } catch (e) {
        error.textContent = `That is not valid JSON: ${e.message}`;
        area.focus();
        return;
      }
      if (!body || typeof body !== "object" || Array.isArray(body)) {
        error.textContent = "The data must be a JSON object, e.g. {\"approved\": true}.";
        area.focus();
        return;
      }
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
