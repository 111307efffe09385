// Live pages: a page's `refresh` runs every few seconds while the page is shown (polling with
// If-None-Match, see apiFresh in api.js; the page re-renders only what changed), stops when the
// page is left, and waits while the tab is hidden. One switch, kept for the tab, pauses every
// live page: the button says which it is.

import { h, put } from "./ui.js";

const PAUSE_KEY = "wb-console.live-paused";
const pad = (n) => String(n).padStart(2, "0");

export function livePaused() {
  return sessionStorage.getItem(PAUSE_KEY) === "1";
}

function setPaused(paused) {
  if (paused) sessionStorage.setItem(PAUSE_KEY, "1");
  else sessionStorage.removeItem(PAUSE_KEY);
}

/**
 * Start refreshing: `refresh()` (async) is called every `interval` ms, never twice at once.
 * Answers `{element, now()}`: the pause/resume switch with the time of the last update, and a
 * way to refresh at once (after an action). Stops when the page is left (ctx.onLeave).
 */
export function live(ctx, refresh, { interval = 3000 } = {}) {
  let timer = null;
  let running = false;
  let again = false;
  let stopped = false;

  const button = h("button", { type: "button", class: "wb-button wb-small wb-live-toggle", id: "live-toggle" });
  // not a live region: a screen reader would read the time out every few seconds
  const status = h("span", { class: "wb-live-status", id: "live-status" });
  const element = h("div", { class: "wb-live", dataset: { live: "" } }, h("span", { class: "wb-live-dot", "aria-hidden": "true" }), status, button);

  function show(text) {
    const paused = livePaused();
    element.classList.toggle("wb-live-paused", paused);
    button.textContent = paused ? "Resume live updates" : "Pause live updates";
    button.setAttribute("aria-pressed", String(paused));
    if (text !== undefined) put(status, text);
    else if (paused) put(status, "Live updates paused");
  }

  function schedule() {
    clearTimeout(timer);
    timer = null;
    if (stopped || livePaused()) return;
    timer = setTimeout(tick, interval);
  }

  async function tick() {
    timer = null;
    if (stopped || !ctx.current()) return stop();
    if (document.hidden) return; // visibilitychange resumes
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      await refresh();
      if (!stopped && !livePaused()) {
        const d = new Date();
        show(`Live · updated ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`);
      }
    } catch (error) {
      // the page already showed why it could not load; say it quietly and keep trying
      if (!stopped && !(error && error.handled)) show(`Live · could not refresh (${(error && error.message) || error}); trying again`);
    } finally {
      running = false;
    }
    if (again) {
      again = false;
      return tick();
    }
    schedule();
  }

  function onVisibility() {
    if (!document.hidden && !stopped && !livePaused() && !running) tick();
  }

  function stop() {
    stopped = true;
    clearTimeout(timer);
    document.removeEventListener("visibilitychange", onVisibility);
  }

  button.addEventListener("click", () => {
    setPaused(!livePaused());
    show();
    if (!livePaused()) tick();
    else clearTimeout(timer);
  });
  document.addEventListener("visibilitychange", onVisibility);
  ctx.onLeave(stop);
  show(livePaused() ? undefined : "Live");
  schedule();

  return {
    element,
    /** Refresh now (after an action), whether paused or not. */
    now: () => (stopped ? Promise.resolve() : tick()),
    stop,
  };
}

/**
 * Replace `container`'s content by what `render()` builds, keeping the page's scroll position
 * and the keyboard focus (on the element with the same id, or the same link) when it was in
 * the container.
 */
export function rerender(container, render) {
  const active = document.activeElement;
  let selector = null;
  if (active && active !== document.body && container.contains(active)) {
    if (active.id) selector = `#${CSS.escape(active.id)}`;
    else if (active.getAttribute("href")) selector = `${active.localName}[href="${CSS.escape(active.getAttribute("href"))}"]`;
    else if (active.getAttribute("name")) selector = `${active.localName}[name="${CSS.escape(active.getAttribute("name"))}"]`;
  }
  const x = window.scrollX;
  const y = window.scrollY;
  render();
  if (window.scrollY !== y || window.scrollX !== x) window.scrollTo(x, y);
  if (selector) {
    const again = container.querySelector(selector);
    if (again) again.focus({ preventScroll: true });
  }
}
