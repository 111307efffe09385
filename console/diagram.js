// BPMN diagrams with the vendored bpmn-js navigated viewer (console/vendor/bpmn-js): loaded
// on first use, since only the instance and model pages draw diagrams.

import { h } from "./ui.js";

const VIEWER_URL = "/console/vendor/bpmn-js/bpmn-navigated-viewer.production.min.js";
let viewerLoading = null;

function loadViewer() {
  if (window.BpmnJS) return Promise.resolve(window.BpmnJS);
  if (!viewerLoading) {
    viewerLoading = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = VIEWER_URL;
      script.onload = () =>
        window.BpmnJS ? resolve(window.BpmnJS) : reject(new Error("The diagram viewer did not load."));
      script.onerror = () => {
        viewerLoading = null;
        script.remove();
        reject(new Error("The diagram viewer (bpmn-js) could not be loaded from the service."));
      };
      document.head.append(script);
    });
  }
  return viewerLoading;
}

/** The markers: `wb-current` waiting, `wb-completed` done, `wb-error` failed. */
export const LEGEND = [
  ["wb-current", "waiting"],
  ["wb-completed", "completed"],
  ["wb-error", "error"],
];

/**
 * Draw `xml` into `container` (emptied first) and mark elements: `markers` is a Map from element
 * id to a marker class. Answers `{viewer, warnings}` (what could not be drawn, in words), or
 * throws an Error in words.
 */
export async function drawDiagram(container, xml, markers = new Map()) {
  const BpmnJS = await loadViewer();
  container.replaceChildren();
  const viewer = new BpmnJS({ container });
  let warnings = [];
  try {
    ({ warnings = [] } = await quietImport(viewer, xml));
  } catch (error) {
    viewer.destroy();
    const text = String((error && error.message) || error);
    if (/no diagram to display/i.test(text)) {
      throw new Error("This file has no diagram layout (bpmndi:BPMNDiagram), so there is nothing to draw.");
    }
    throw new Error(`The diagram could not be drawn: ${text}`);
  }
  const canvas = viewer.get("canvas");
  const registry = viewer.get("elementRegistry");
  for (const [elementId, marker] of markers) {
    if (registry.get(elementId)) canvas.addMarker(elementId, marker);
  }
  fit(canvas);
  return { viewer, warnings: warnings.map((w) => String(w.message || w)) };
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
