// /console/models (GET /v1.0/process-models) and /console/models/<group:model>/: the model's
// files (download, upload), the versions its instances run on and its diagram.

import { api, apiFresh, instanceModels, modelSeg, query, seg } from "./api.js";
import { autoLayoutNote, drawDiagram, setElementBadges, warningsNote, zoomControls } from "./diagram.js";
import { live } from "./live.js";
import {
  add, confirmDialog, empty, facts, field, h, label, loading, messageOf, muted, notice, pagination, problem, put, replaceLast, saveBlob, section, shortSha, table, typedObject, when,
} from "./ui.js";

const PER_PAGE = 25;
const IDENTIFIER = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}([:/][A-Za-z0-9][A-Za-z0-9._-]{0,99})*$/;
/* as the service allows them (SpiffArena's names): no '/', '\', '..' or control characters,
   at most 255 bytes, ending in .bpmn, .dmn or .json */
function validFileName(name) {
  return /^[^/\\\x00-\x1f\x7f]*[^/\\\x00-\x1f\x7f\s][^/\\\x00-\x1f\x7f]*\.(bpmn|dmn|json)$/.test(name)
    && !name.includes("..")
    && new TextEncoder().encode(name).length <= 255;
}

export function modelHref(identifier) {
  return `/console/models/${modelSeg(identifier)}/`;
}

function fileUrl(identifier, file, version) {
  return `/v1.0/process-models/${modelSeg(identifier)}/files/${seg(file)}${query({ version })}`;
}

/** Fetch a file with the token, then save it (a real download). */
async function download(identifier, file, version) {
  const response = await api(fileUrl(identifier, file, version), { raw: true });
  const blob = await response.blob();
  const name = version ? file.replace(/(\.[a-z]+)$/i, `@${version.slice(0, 10)}$1`) : file;
  saveBlob(new Blob([blob], { type: "application/xml" }), name);
}

/** An upload form: PUT the chosen file's text. `fixedModel` when on a model's page. */
function uploadForm(ctx, fixedModel) {
  const error = h("p", { class: "wb-field-error", role: "alert" });
  const fileInput = h("input", { type: "file", name: "file", id: "upload-file", accept: ".bpmn,.dmn,.json,application/xml,text/xml,application/json", required: true });
  const nameInput = h("input", { type: "text", name: "file_name", id: "upload-name", placeholder: "as chosen, e.g. orders.bpmn", autocomplete: "off" });
  const modelInput = fixedModel
    ? null
    : h("input", { type: "text", name: "model", id: "upload-model", placeholder: "group/model", required: true, autocomplete: "off" });
  const submit = h("button", { type: "submit", class: "wb-button wb-primary" }, "Upload");
  const form = h(
    "form",
    { class: "wb-form wb-upload", "aria-label": "Upload a file" },
    h(
      "div",
      { class: "wb-filters" },
      modelInput ? field("Model identifier", modelInput, "wb-grow") : null,
      field("BPMN or DMN file", fileInput, "wb-grow"),
      field("Save as (optional)", nameInput),
      submit,
    ),
    error,
    h(
      "p",
      { class: "wb-help" },
      "The file replaces the one with the same name (or is added); the whole model is checked first, and a new version starts for new instances while running ones keep theirs.",
    ),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    const model = fixedModel || modelInput.value.trim();
    const file = fileInput.files && fileInput.files[0];
    const name = nameInput.value.trim() || (file ? file.name : "");
    if (!IDENTIFIER.test(model)) {
      error.textContent = "Give the model identifier as group/model (letters, digits, '.', '_' and '-').";
      modelInput && modelInput.focus();
      return;
    }
    if (!file) {
      error.textContent = "Choose a .bpmn, .dmn or .json file.";
      fileInput.focus();
      return;
    }
    if (!validFileName(name)) {
      error.textContent = "The file name must end in .bpmn, .dmn or .json, without '/', '\\', '..' or control characters (at most 255 bytes).";
      nameInput.focus();
      return;
    }
    submit.disabled = true;
    try {
      const text = await file.text();
      const contentType = /\.json$/.test(name) ? "application/json" : "application/xml";
      const answer = await api(fileUrl(model, name), { method: "PUT", text, contentType });
      const identifier = (answer && answer.identifier) || model.replace(/:/g, "/");
      ctx.navigate(modelHref(identifier), {
        state: { flash: `${name} saved: the model's current version is now ${String((answer && answer.version_sha) || "").slice(0, 10)}.` },
      });
    } catch (e) {
      if (e.handled || !ctx.current()) return;
      submit.disabled = false;
      error.textContent = messageOf(e);
    }
  });
  return form;
}

export async function modelsPage(view, ctx) {
  const page = Math.max(1, Number.parseInt(ctx.search.get("page") || "1", 10) || 1);
  const results = h("div", {}, loading("Loading models…"));
  add(view,
    h("div", { class: "wb-title" }, h("h1", {}, "Models")),
    h("p", { class: "wb-lead" }, "Process models, by identifier. Each is a folder of BPMN (and DMN) files; instances keep the version they started on."),
    ctx.state.flash ? notice(ctx.state.flash, ctx.state.flashKind || "ok") : null,
    results,
    section("Upload a file", uploadForm(ctx, null)),
  );
  let answer;
  try {
    answer = await api(`/v1.0/process-models${query({ page, per_page: PER_PAGE })}`);
  } catch (error) {
    if (!error.handled) put(results, problem(error));
    return;
  }
  if (!ctx.current()) return;
  if (!answer.results.length) {
    put(results,
      page > 1
        ? empty("No models on this page. ", h("a", { href: "/console/models" }, "First page"), ".")
        : empty("No process models yet: upload a BPMN file below, or start the service with ", h("code", {}, "WORKFLOW_BACKEND_PROCESS_MODELS_DIR"), " pointing at a folder of models."),
    );
    return;
  }
  const rows = answer.results.map((m) => {
    const starts = (m.summary && m.summary.start_messages) || [];
    return h(
      "tr",
      { dataset: { model: m.identifier } },
      h("td", {}, h("a", { href: modelHref(m.identifier) }, m.identifier)),
      h("td", {}, m.display_name),
      h("td", {}, h("code", {}, m.primary_process_id)),
      h("td", {}, starts.length ? h("span", { class: "wb-keys" }, starts.map((s) => h("code", {}, s))) : muted("—")),
      h("td", {}, shortSha(m.version_sha)),
      h("td", {}, when(m.updated_at)),
    );
  });
  put(results,
    table(["Model", "Name", "Primary process", "Starts on messages", "Version", "Updated"], rows, { class: "wb-table wb-models" }),
    pagination(answer.pagination, page, (p) => `/console/models${query({ page: p })}`, "models"),
  );
}

/* What SpiffWorkflow loads and fails on only when the element runs: the model was accepted,
   an instance errs at that element. */
function modelWarnings(warnings) {
  if (!warnings.length) return null;
  return section(
    `Warnings (${warnings.length})`,
    h("p", {}, "These elements fail when an instance reaches them (as in SpiffArena); the rest of the model runs."),
    table(
      ["File", "Element", "What"],
      warnings.map((w) => [h("code", {}, w.file_name), w.element_id ? h("code", {}, w.element_id) : muted("—"), w.reason]),
      { class: "wb-table wb-warnings", id: "model-warnings" },
    ),
  );
}

export async function modelDetailPage(view, ctx) {
  const identifier = ctx.params[0].replace(/:/g, "/");
  let viewer = null;
  ctx.onLeave(() => viewer && viewer.destroy());
  add(view, crumbs(identifier), loading("Loading the model…"));
  let model;
  try {
    model = await api(`/v1.0/process-models/${modelSeg(identifier)}`);
  } catch (error) {
    if (error.handled || !ctx.current()) return;
    replaceLast(view,
      h("h1", {}, identifier),
      error.status === 404 ? empty(`There is no model ${identifier}. `, h("a", { href: "/console/models" }, "Back to the models"), ".") : problem(error),
    );
    return;
  }
  if (!ctx.current()) return;
  ctx.setTitle(model.display_name || model.identifier);
  const summary = model.summary || {};
  const files = model.files || [];
  const bpmnFiles = files.filter((f) => /\.bpmn$/i.test(f.name));
  const versions = model.versions_in_use || [];
  const primaryProcess = (summary.processes || []).find((p) => p.is_primary);
  const primaryFile = model.primary_file_name || (primaryProcess && primaryProcess.file) || (bpmnFiles[0] && bpmnFiles[0].name);
  const actionResult = h("div", { "aria-live": "polite" });

  // the diagram: a file at a version (the current one, or one that instances still run on)
  const diagramBox = h("div", { class: "wb-diagram", id: "model-diagram", "aria-label": "Process diagram" });
  const fileSelect = h(
    "select",
    { id: "diagram-file", name: "file" },
    bpmnFiles.map((f) => h("option", { value: f.name, selected: f.name === primaryFile }, f.name)),
  );
  const versionOptions = [{ version_sha: model.current_version || model.version_sha, current: true }];
  for (const v of versions) if (!v.current) versionOptions.push(v);
  const versionSelect = h(
    "select",
    { id: "diagram-version", name: "version" },
    versionOptions.map((v) => h("option", { value: v.current ? "" : v.version_sha }, `${String(v.version_sha).slice(0, 10)}${v.current ? " (current)" : ""}`)),
  );
  const downloadButton = h("button", { type: "button", class: "wb-button", id: "diagram-download" }, "Download this file");
  const diagramError = h("div", { role: "alert" });
  let drawing = 0;
  async function drawSelected() {
    const ours = ++drawing;
    if (viewer) {
      viewer.destroy();
      viewer = null;
    }
    put(diagramError);
    if (!fileSelect.value) {
      put(diagramBox, h("p", { class: "wb-empty" }, "This model has no BPMN file to draw."));
      return;
    }
    put(diagramBox, loading("Drawing the diagram…"));
    try {
      const xml = await api(fileUrl(identifier, fileSelect.value, versionSelect.value || undefined));
      if (ours !== drawing || !ctx.current()) return;
      const drawn = await drawDiagram(diagramBox, xml);
      if (ours !== drawing || !ctx.current()) {
        drawn.viewer.destroy();
        return;
      }
      viewer = drawn.viewer;
      put(diagramError, autoLayoutNote(drawn.autoLayout), warningsNote(drawn.warnings));
      drawnCurrent = !versionSelect.value;
      if (drawnCurrent && lastCounts) showCounts(lastCounts.data);
      else put(countsNote, drawnCurrent ? null : "The badges (instances waiting, in error) are drawn on the current version.");
      if (drawnCurrent) refreshCounts().catch(() => {});
    } catch (error) {
      if (error.handled || ours !== drawing || !ctx.current()) return;
      put(diagramBox, h("p", { class: "wb-empty" }, messageOf(error)));
    }
  }

  // element counts: badges on the current version's elements (GET .../element-counts)
  const countsNote = h("p", { class: "wb-help", id: "element-counts-note" });
  let drawnCurrent = false;
  let lastCounts = null;
  let countsRefused = false;
  const listHref = (status) => `/console/instances${query({ process_model_identifier: identifier, status })}`;
  function showCounts(counts) {
    if (!viewer || !drawnCurrent) return;
    const elements = counts.elements || [];
    setElementBadges(viewer, elements, (kind) => (kind === "error" ? listHref("error") : null));
    const waiting = elements.reduce((n, e) => n + (Number(e.waiting) || 0), 0);
    const failed = elements.reduce((n, e) => n + (Number(e.error) || 0), 0);
    const other = counts.other_versions || {};
    put(countsNote,
      h("span", { class: "wb-badge wb-badge-waiting", "aria-hidden": "true" }, "n"), " instances waiting at an element, ",
      h("span", { class: "wb-badge wb-badge-error", "aria-hidden": "true" }, "n"), " in error there: ",
      `${waiting} waiting and ${failed} in error on this version`,
      other.waiting || other.error ? `; ${other.waiting || 0} waiting and ${other.error || 0} in error on older versions (not drawn)` : "",
      ".",
    );
  }
  async function refreshCounts() {
    if (countsRefused || !viewer || !drawnCurrent) return;
    let answer;
    try {
      answer = await apiFresh(`/v1.0/process-models/${modelSeg(identifier)}/element-counts`, lastCounts);
    } catch (error) {
      // a token that cannot read the instances (or a service without counts): no badges, no error
      if ([403, 404].includes(error.status)) {
        countsRefused = true;
        return;
      }
      throw error;
    }
    if (!ctx.current()) return;
    const first = !lastCounts;
    lastCounts = answer;
    if (answer.changed || first) showCounts(answer.data);
  }
  const updates = live(ctx, refreshCounts);
  fileSelect.addEventListener("change", drawSelected);
  versionSelect.addEventListener("change", drawSelected);
  downloadButton.addEventListener("click", () => fileDownload(fileSelect.value, versionSelect.value || undefined, diagramError));

  function fileDownload(name, version, out) {
    put(out);
    download(identifier, name, version).catch((error) => {
      if (!error.handled && ctx.current()) put(out, problem(error));
    });
  }

  const deleteButton = h("button", { type: "button", class: "wb-button wb-danger", id: "delete-model" }, "Delete model…");
  deleteButton.addEventListener("click", async () => {
    const ok = await confirmDialog({
      title: `Delete ${identifier}?`,
      text: "The model and its files go away; messages that started it will be refused. The service refuses while instances of it are still live.",
      confirm: "Delete model",
      cancel: "Keep it",
    });
    if (!ok) return;
    deleteButton.disabled = true;
    put(actionResult);
    try {
      await api(`/v1.0/process-models/${modelSeg(identifier)}`, { method: "DELETE" });
      ctx.navigate("/console/models", { state: { flash: `Model ${identifier} deleted.` } });
    } catch (error) {
      if (error.handled || !ctx.current()) return;
      deleteButton.disabled = false;
      put(actionResult, problem(error));
    }
  });

  const filesErrors = h("div", { role: "alert" });
  const fileRows = files.map((f) => {
    const button = h("button", { type: "button", class: "wb-button wb-small", dataset: { download: f.name }, "aria-label": `Download ${f.name}` }, "Download");
    button.addEventListener("click", () => fileDownload(f.name, undefined, filesErrors));
    return h(
      "tr",
      { dataset: { file: f.name } },
      h("td", {}, h("code", {}, f.name), f.name === primaryFile ? h("span", { class: "wb-tag" }, "primary") : null),
      h("td", { class: "wb-num" }, `${f.size.toLocaleString("en")} B`),
      h("td", {}, h("code", { title: f.sha256 }, f.sha256.slice(0, 12))),
      h("td", {}, button),
    );
  });

  const list = (items) => (items && items.length ? h("span", { class: "wb-keys" }, items.map((s) => h("code", {}, s))) : muted("none"));
  const instancesHref = `/console/instances${query({ process_model_identifier: identifier })}`;

  put(view,
    crumbs(identifier),
    h("div", { class: "wb-title" }, h("h1", {}, model.display_name || identifier), h("code", { class: "wb-id" }, identifier), updates.element),
    ctx.state.flash ? notice(ctx.state.flash) : null,
    h(
      "div",
      { class: "wb-toolbar" },
      h("div", { class: "wb-actions" }, h("a", { class: "wb-button", href: instancesHref }, "Instances of this model"), deleteButton),
      actionResult,
    ),
    facts([
      ["Current version", shortSha(model.current_version || model.version_sha)],
      ["Primary process", h("code", {}, model.primary_process_id)],
      ["Starts on messages", list(summary.start_messages)],
      ["Waits for messages", list(summary.waits_for_messages)],
      ["Sends messages", list(summary.sends_messages)],
      ["Service operators", summary.service_operators && summary.service_operators.length ? list(summary.service_operators) : null],
      ["Created", when(model.created_at)],
      ["Updated", when(model.updated_at)],
    ]),
    section(
      "Diagram",
      h(
        "div",
        { class: "wb-diagram-bar" },
        h(
          "div",
          { class: "wb-filters wb-inline" },
          field("File", fileSelect),
          field("Version", versionSelect),
          downloadButton,
        ),
        zoomControls(() => viewer),
      ),
      diagramError,
      diagramBox,
      countsNote,
    ),
    section("Start an instance", startForm(identifier, () => updates.now())),
    modelWarnings(model.warnings || []),
    section(
      "Files",
      files.length ? table(["File", "Size", "SHA-256", ""], fileRows, { class: "wb-table wb-files" }) : empty("No files."),
      filesErrors,
    ),
    section(
      "Versions in use",
      versions.length
        ? table(
            ["Version", "Live instances", "Created", ""],
            versions.map((v) => [
              h("span", {}, shortSha(v.version_sha), v.current ? h("span", { class: "wb-tag" }, "current") : null),
              h("span", { class: "wb-num" }, String(v.live_instances)),
              when(v.created_at),
              h("a", { href: instancesHref }, "Instances"),
            ]),
          )
        : empty("No live instances run on this model: every instance has finished, or none has started."),
    ),
    section(
      "Processes",
      table(
        ["Process", "Name", "File", "Start events"],
        (summary.processes || []).map((p) => [
          h("span", {}, h("code", {}, p.id), p.is_primary ? h("span", { class: "wb-tag" }, "primary") : null),
          p.name || muted("—"),
          h("code", {}, p.file),
          (p.start_events || []).length
            ? h("span", { class: "wb-keys" }, p.start_events.map((s) => h("code", {}, s.message_name ? `${s.kind}: ${s.message_name}` : s.signal_name ? `${s.kind}: ${s.signal_name}` : s.kind)))
            : muted("—"),
        ]),
      ),
    ),
    section("Upload a file", uploadForm(ctx, identifier)),
  );
  drawSelected();
}

/** "Start an instance": JSON data -> POST /v1.0/process-instances/{model}; links the instance. */
function startForm(identifier, onStarted) {
  const area = h("textarea", { id: "start-data", name: "data", rows: 3, spellcheck: "false", class: "wb-code", "aria-describedby": "start-help" }, "{}");
  const error = h("p", { class: "wb-field-error", role: "alert" });
  const result = h("div", { "aria-live": "polite" });
  const submit = h("button", { type: "submit", class: "wb-button wb-primary" }, "Start instance");
  const form = h(
    "form",
    { class: "wb-form wb-start-form", id: "start-form", "aria-label": "Start an instance", novalidate: true },
    h("label", { for: "start-data" }, "Data (a JSON object: the first task data)"),
    area,
    h("p", { class: "wb-help", id: "start-help" }, "Starts the model's primary process on its current version and runs it to its first wait."),
    error,
    h("div", { class: "wb-actions" }, submit),
    result,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    const body = typedObject(area, error, "The data", `{"customer": "ACME"}`);
    if (!body) return;
    submit.disabled = true;
    put(result);
    try {
      const answer = await api(`/v1.0/process-instances/${modelSeg(identifier)}`, { method: "POST", body });
      const instance = answer.process_instance;
      instanceModels.set(String(instance.id), instance.process_model_identifier || identifier);
      put(result,
        h("div", { class: "wb-notice wb-notice-ok", role: "status", id: "start-result" },
          "Instance ", h("a", { href: `/console/instances/${instance.id}`, id: "start-result-instance" }, `#${instance.id}`),
          " started: it is now ", label("status", instance.status), instance.error ? ` (${instance.error.message})` : "", "."),
      );
      onStarted();
    } catch (e) {
      if (!e.handled) put(result, problem(e));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

function crumbs(identifier) {
  return h("p", { class: "wb-crumbs" }, h("a", { href: "/console/models" }, "Models"), " / ", identifier);
}
