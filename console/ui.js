// Small DOM helpers shared by the pages: everything is built with elements and text nodes
// (never innerHTML), so what the API answers is shown, never run.

/** h("a", {href, class}, "text", child...) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

export function link(href, ...children) {
  return h("a", { href }, ...children);
}

const pad = (n) => String(n).padStart(2, "0");

/** `2025-01-31 14:05:09` in the browser's time zone; the ISO value as the tooltip. */
export function when(value) {
  if (!value) return h("span", { class: "wb-muted" }, "—");
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  const text =
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  return h("time", { datetime: date.toISOString(), title: date.toISOString() }, text);
}

/** "in 4 min", "3 h ago" */
export function relative(value) {
  if (!value) return "";
  const seconds = Math.round((new Date(value).getTime() - Date.now()) / 1000);
  const abs = Math.abs(seconds);
  const amount =
    abs < 60
      ? `${abs} s`
      : abs < 3600
        ? `${Math.round(abs / 60)} min`
        : abs < 86400
          ? `${Math.round(abs / 3600)} h`
          : `${Math.round(abs / 86400)} d`;
  return seconds >= 0 ? `in ${amount}` : `${amount} ago`;
}

export function json(value) {
  return h("pre", { class: "wb-json" }, JSON.stringify(value, null, 2));
}

export function shortSha(sha) {
  if (!sha) return h("span", { class: "wb-muted" }, "—");
  return h("code", { title: sha }, String(sha).slice(0, 10));
}

export function muted(text) {
  return h("span", { class: "wb-muted" }, text);
}

/** A state or status label: class `wb-label wb-<kind>-<value>`, data-<kind>=value. */
export function label(kind, value) {
  return h(
    "span",
    { class: `wb-label wb-${kind} wb-${kind}-${value}`, dataset: { [kind]: value } },
    String(value).replace(/_/g, " "),
  );
}

/** A table with a header row; rows are arrays of cells or ready <tr>s. */
export function table(headings, rows, attrs = {}) {
  return h(
    "div",
    { class: "wb-table-wrap" },
    h(
      "table",
      { class: "wb-table", ...attrs },
      h("thead", {}, h("tr", {}, headings.map((title) => h("th", { scope: "col" }, title)))),
      h(
        "tbody",
        {},
        rows.map((row) =>
          row instanceof Node ? row : h("tr", {}, row.map((cell) => h("td", {}, cell))),
        ),
      ),
    ),
  );
}

export function section(title, ...children) {
  const id = `s-${title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
  return h(
    "section",
    { class: "wb-section", "aria-labelledby": id },
    h("h2", { id }, title),
    ...children,
  );
}

export function empty(...children) {
  return h("p", { class: "wb-empty" }, ...children);
}

/** An error explained in words (role=alert so screen readers hear it). */
export function problem(error) {
  return h("div", { class: "wb-notice wb-notice-error", role: "alert" }, messageOf(error));
}

export function notice(text, kind = "ok") {
  return h("div", { class: `wb-notice wb-notice-${kind}`, role: "status" }, text);
}

export function messageOf(error) {
  return (error && error.message) || String(error);
}

export function loading(text = "Loading…") {
  return h("p", { class: "wb-loading", role: "status" }, text);
}

/** "Page 2 of 5 · 43 messages", with previous/next links keeping the other filters. */
export function pagination(pagination, page, hrefFor, noun) {
  if (!pagination) return null;
  const pages = Math.max(1, pagination.pages || 1);
  const total = `${pagination.total}${pagination.total_exact === false ? "+" : ""}`;
  return h(
    "nav",
    { class: "wb-pager", "aria-label": "Pages" },
    page > 1
      ? h("a", { href: hrefFor(page - 1), rel: "prev" }, "← Previous")
      : h("span", { class: "wb-pager-off" }, "← Previous"),
    h("span", {}, `Page ${page} of ${pages} · ${total} ${noun}`),
    page < pages
      ? h("a", { href: hrefFor(page + 1), rel: "next" }, "Next →")
      : h("span", { class: "wb-pager-off" }, "Next →"),
  );
}

/** A <dl> of [term, value] pairs (null values are left out). */
export function facts(pairs) {
  return h(
    "dl",
    { class: "wb-facts" },
    pairs
      .filter(([, value]) => value !== undefined && value !== null)
      .map(([term, value]) => h("div", {}, h("dt", {}, term), h("dd", {}, value))),
  );
}

/** Save `blob` as `name` (a real download, from the fetched content). */
export function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = h("a", { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * An in-page confirmation (<dialog>): answers true when the operator confirms. Escape or the
 * cancel button answers false.
 */
export function confirmDialog({ title, text, confirm, cancel = "Cancel", danger = true }) {
  return new Promise((resolve) => {
    const dialog = h(
      "dialog",
      { class: "wb-dialog", "aria-labelledby": "wb-dialog-title" },
      h(
        "form",
        { method: "dialog" },
        h("h2", { id: "wb-dialog-title" }, title),
        h("p", {}, text),
        h(
          "div",
          { class: "wb-actions" },
          h("button", { value: "cancel", class: "wb-button wb-quiet", autofocus: true }, cancel),
          h(
            "button",
            { value: "confirm", class: `wb-button ${danger ? "wb-danger" : "wb-primary"}` },
            confirm,
          ),
        ),
      ),
    );
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "confirm");
      dialog.remove();
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** A labelled form control (`control` needs an id): <div class=wb-field><label for>…</div>. */
export function field(text, control, cls = "") {
  return h("div", { class: `wb-field ${cls}`.trim() }, h("label", { for: control.id }, text), control);
}

const present = (children) => children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false);

/** el.replaceChildren without the null/false placeholders (the DOM would print "null"). */
export function put(el, ...children) {
  el.replaceChildren(...present(children));
}

/** el.append without the null/false placeholders. */
export function add(el, ...children) {
  el.append(...present(children));
}

/** Replace el's last child (a "Loading…" line) with the children. */
export function replaceLast(el, ...children) {
  el.lastChild.replaceWith(...present(children));
}

/**
 * The JSON object typed into `area` (empty: `{}`), or null after saying in `error` why it is
 * none (`what` names it: "The data", "The payload"; `example` shows one) and focusing it.
 */
export function typedObject(area, error, what, example) {
  let value;
  try {
    value = JSON.parse(area.value.trim() || "{}");
  } catch (e) {
    error.textContent = `${what} is not valid JSON: ${e.message}`;
    area.focus();
    return null;
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    error.textContent = `${what} must be a JSON object, e.g. ${example}.`;
    area.focus();
    return null;
  }
  return value;
}
