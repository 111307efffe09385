// BPMN diagrams with the vendored bpmn-js navigated viewer (console/vendor/bpmn-js): loaded
// on first use, since only the instance and model pages draw diagrams. A file without layout
// (no bpmndi:BPMNDiagram: written by hand or generated) is laid out first by the vendored
// bpmn-auto-layout (console/vendor/bpmn-auto-layout), also loaded on first use.

import { h } from "./ui.js";

const VIEWER_URL = "/console/vendor/bpmn-js/bpmn-navigated-viewer.production.min.js";
const LAYOUT_URL = "/console/vendor/bpmn-auto-layout/bpmn-auto-layout.min.js";
const loading = new Map();

/** Load a vendored UMD/IIFE bundle once; answers the global `name` it defines. */
function loadBundle(url, name, what) {
  if (window[name]) return Promise.resolve(window[name]);
  if (!loading.has(url)) {
    loading.set(url, new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = url;
      script.onload = () =>
        window[name] ? resolve(window[name]) : reject(new Error(`The ${what} did not load.`));
      script.onerror = () => {
        loading.delete(url);
        script.remove();
        reject(new Error(`The ${what} could not be loaded from the service.`));
      };
      document.head.append(script);
    }));
  }
  return loading.get(url);
}

const loadViewer = () => loadBundle(VIEWER_URL, "BpmnJS", "diagram viewer (bpmn-js)");
const loadLayout = () => loadBundle(LAYOUT_URL, "BpmnAutoLayout", "automatic layout (bpmn-auto-layout)");

/** Whether bpmn-js refused `error` because the file has no bpmndi:BPMNDiagram at all. */
const isWithoutLayout = (error) => /no diagram to display/i.test(String((error && error.message) || error));

/** The file with a generated bpmndi:BPMNDiagram (element ids kept, so markers still apply). */
async function laidOut(xml) {
  const { layoutProcess } = await loadLayout();
  try {
    return await layoutProcess(withFlowReferences(xml));
  } catch (error) {
    throw new Error(
      "This file has no diagram layout (bpmndi:BPMNDiagram) and the automatic layout failed: " +
        String((error && error.message) || error),
    );
  }
}

/** The markers: `wb-current` waiting, `wb-completed` done, `wb-error` failed. */
export const LEGEND = [
  ["wb-current", "waiting"],
  ["wb-completed", "completed"],
  ["wb-error", "error"],
];

/**
 * Draw `xml` into `container` (emptied first) and mark elements: `markers` is a Map from element
 * id to a marker class. A file without layout is drawn with an automatic one. Answers
 * `{viewer, warnings, autoLayout}` (`warnings`: what could not be drawn, in words; `autoLayout`:
 * whether the layout was generated), or throws an Error in words.
 */
export async function drawDiagram(container, xml, markers = new Map()) {
  const BpmnJS = await loadViewer();
  let viewer = null;
  let warnings = [];
  let autoLayout = false;
  try {
    try {
      viewer = newViewer(BpmnJS, container);
      ({ warnings = [] } = await quietImport(viewer, xml));
    } catch (error) {
      if (!isWithoutLayout(error)) throw error;
      viewer.destroy();
      viewer = null;
      const generated = await laidOut(xml);
      autoLayout = true;
      viewer = newViewer(BpmnJS, container);
      ({ warnings = [] } = await quietImport(viewer, generated));
    }
  } catch (error) {
    if (viewer) viewer.destroy();
    const text = String((error && error.message) || error);
    if (text.startsWith("This file has no diagram layout")) throw error;
    throw new Error(`The diagram could not be drawn: ${text}`);
  }
  const canvas = viewer.get("canvas");
  const registry = viewer.get("elementRegistry");
  for (const [elementId, marker] of markers) {
    if (registry.get(elementId)) canvas.addMarker(elementId, marker);
  }
  fit(canvas);
  return { viewer, warnings: warnings.map((w) => String(w.message || w)), autoLayout };
}

const BPMN_MODEL = "http://www.omg.org/spec/BPMN/20100524/MODEL";
// what may precede bpmn:incoming and bpmn:outgoing inside a flow node (BPMN's schema order)
const BEFORE_FLOW_REFERENCES = new Set(["documentation", "extensionElements", "incoming", "outgoing"]);

/**
 * bpmn-auto-layout follows a node's `bpmn:incoming`/`bpmn:outgoing` children, which the schema
 * makes optional and files written by hand often leave out (the engine reads sourceRef and
 * targetRef only); without them every node lands on its own row and no flow is drawn. Adds the
 * missing ones from each sequence flow's sourceRef and targetRef; anything else is unchanged.
 */
function withFlowReferences(xml) {
  const doc = new DOMParser().parseFromString(xml, "application/xml");
  if (doc.getElementsByTagName("parsererror").length) return xml; // the layout says why
  const byId = new Map();
  for (const element of doc.getElementsByTagNameNS(BPMN_MODEL, "*")) {
    const id = element.getAttribute("id");
    if (id) byId.set(id, element);
  }
  for (const flow of doc.getElementsByTagNameNS(BPMN_MODEL, "sequenceFlow")) {
    const id = flow.getAttribute("id");
    if (!id) continue;
    addReference(byId.get(flow.getAttribute("sourceRef")), "outgoing", id);
    addReference(byId.get(flow.getAttribute("targetRef")), "incoming", id);
  }
  return new XMLSerializer().serializeToString(doc);
}

function addReference(node, name, flowId) {
  if (!node) return;
  const children = [...node.children];
  const known = children.some(
    (child) => child.namespaceURI === BPMN_MODEL && child.localName === name && child.textContent.trim() === flowId,
  );
  if (known) return;
  const reference = node.ownerDocument.createElementNS(BPMN_MODEL, node.prefix ? `${node.prefix}:${name}` : name);
  reference.textContent = flowId;
  // incoming ones come before outgoing ones
  const after = children.find(
    (child) =>
      !(child.namespaceURI === BPMN_MODEL && BEFORE_FLOW_REFERENCES.has(child.localName)) ||
      (name === "incoming" && child.namespaceURI === BPMN_MODEL && child.localName === "outgoing"),
  );
  node.insertBefore(reference, after || null);
}

/** Change the markers from `previous` to `markers` (Maps of element id -> marker class). */
export function setMarkers(viewer, markers, previous = new Map()) {
  const canvas = viewer.get("canvas");
  const registry = viewer.get("elementRegistry");
  for (const [elementId, marker] of previous) {
    if (markers.get(elementId) !== marker && registry.get(elementId)) canvas.removeMarker(elementId, marker);
  }
  for (const [elementId, marker] of markers) {
    if (previous.get(elementId) !== marker && registry.get(elementId)) canvas.addMarker(elementId, marker);
  }
}

const plural = (n, one, many) => `${n.toLocaleString("en")} ${n === 1 ? one : many}`;

/**
 * Badges on the drawn elements (bpmn-js overlays): how many instances wait at each and how many
 * are in error there. `counts` is [{element_id, waiting, error}]; earlier badges are replaced.
 * `hrefFor(kind)` gives the link of a badge (the instance list). Answers how many elements got
 * a badge (elements of another file of the model are not drawn here).
 */
export function setElementBadges(viewer, counts, hrefFor = () => null) {
  const overlays = viewer.get("overlays");
  const registry = viewer.get("elementRegistry");
  overlays.remove({ type: "wb-counts" });
  let placed = 0;
  for (const c of counts) {
    const element = registry.get(c.element_id);
    const waiting = Number(c.waiting) || 0;
    const failed = Number(c.error) || 0;
    if (!element || (!waiting && !failed)) continue;
    const badge = (kind, n, text) => {
      const attrs = { class: `wb-badge wb-badge-${kind}`, title: text, "aria-label": text, dataset: { count: n } };
      const href = hrefFor(kind);
      return href ? h("a", { ...attrs, href }, String(n)) : h("span", attrs, String(n));
    };
    const html = h(
      "div",
      { class: "wb-badges", dataset: { elementId: c.element_id } },
      waiting ? badge("waiting", waiting, `${plural(waiting, "instance waits", "instances wait")} at ${element.businessObject.name || c.element_id}`) : null,
      failed ? badge("error", failed, `${plural(failed, "instance is", "instances are")} in error at ${element.businessObject.name || c.element_id}`) : null,
    );
    const isEvent = /Event$/.test(element.type) || /Gateway$/.test(element.type);
    overlays.add(c.element_id, "wb-counts", {
      position: isEvent ? { bottom: -4, left: -14 } : { bottom: 12, left: -12 },
      html,
    });
    placed += 1;
  }
  return placed;
}

function newViewer(BpmnJS, container) {
  container.replaceChildren();
  return new BpmnJS({ container });
}

/** A line under a diagram drawn with a generated layout, saying so. */
export function autoLayoutNote(autoLayout) {
  if (!autoLayout) return null;
  return h(
    "p",
    { class: "wb-notice wb-notice-info wb-diagram-auto-layout", role: "note" },
    h("strong", {}, "Laid out automatically: "),
    "this file has no diagram layout (bpmndi:BPMNDiagram), so the console placed its elements itself. The positions are not the modeller's.",
  );
}

/**
 * bpmn-js reports an element it cannot draw (a shape without layout, a flow to it) both as an
 * import warning and on the browser console; the console shows the warnings in words on the
 * page instead, so only the console lines that repeat a warning are held back.
 */
async function quietImport(viewer, xml) {
  const original = console.error;
  const held = [];
  console.error = (...args) => held.push(args);
  const known = new Set();
  try {
    const result = await viewer.importXML(xml);
    for (const w of result.warnings || []) known.add(String(w.message));
    return result;
  } catch (error) {
    // the page says why in words; bpmn-js's own console lines about it are held back
    known.add(String(error && error.message));
    for (const w of (error && error.warnings) || []) known.add(String(w.message));
    throw error;
  } finally {
    console.error = original;
    for (const args of held) {
      const [first] = args;
      const repeats =
        (typeof first === "string" && first.startsWith("failed to import")) ||
        (first instanceof Error && known.has(first.message));
      if (!repeats) original.apply(console, args);
    }
  }
}

/** A line under a diagram saying what could not be drawn. */
export function warningsNote(warnings) {
  if (!warnings.length) return null;
  const shown = warnings.slice(0, 3).join("; ");
  const more = warnings.length > 3 ? ` (and ${warnings.length - 3} more)` : "";
  return h(
    "p",
    { class: "wb-help wb-diagram-warning" },
    `Part of the diagram could not be drawn: ${shown}${more}.`,
  );
}

function fit(canvas) {
  try {
    canvas.zoom("fit-viewport", "auto");
    // leave a margin and never blow a small diagram up past its natural size
    const zoom = canvas.zoom();
    canvas.zoom(Math.min(zoom * 0.95, 1.4), "auto");
  } catch {
    // a hidden container has no size: keep the default zoom
  }
}

/** Zoom controls for a drawn viewer (buttons, so they are keyboard reachable). */
export function zoomControls(getViewer) {
  const act = (fn) => () => {
    const viewer = getViewer();
    if (viewer) fn(viewer.get("canvas"));
  };
  return h(
    "div",
    { class: "wb-zoom", role: "group", "aria-label": "Zoom" },
    h("button", { type: "button", class: "wb-button wb-small", onclick: act((c) => c.zoom(c.zoom() * 1.25)), "aria-label": "Zoom in" }, "+"),
    h("button", { type: "button", class: "wb-button wb-small", onclick: act((c) => c.zoom(c.zoom() / 1.25)), "aria-label": "Zoom out" }, "−"),
    h("button", { type: "button", class: "wb-button wb-small", onclick: act((c) => fit(c)) }, "Fit"),
  );
}
