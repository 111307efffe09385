// The console's shell: routing on the location (history.pushState + real links), the header
// (navigation, who is signed in, sign-out) and the sign-in page.

import { clearToken, getToken, setToken, setUnauthorizedHandler, tokenClaims } from "./api.js";
import { add, h, put } from "./ui.js";
import { messageDetailPage, messagesPage } from "./messages.js";
import { instanceDetailPage, instancesPage } from "./instances.js";
import { modelDetailPage, modelsPage } from "./models.js";
import { overviewPage } from "./overview.js";

const BASE = "/console";

const ROUTES = [
  { path: /^\/?$/, page: null, redirect: "/overview" },
  { path: /^\/overview\/?$/, page: overviewPage, nav: "overview", title: "Overview" },
  { path: /^\/sign-in\/?$/, page: signInPage, open: true, title: "Sign in" },
  { path: /^\/messages\/?$/, page: messagesPage, nav: "messages", title: "Messages" },
  { path: /^\/messages\/(\d+)\/?$/, page: messageDetailPage, nav: "messages", title: "Message" },
  { path: /^\/instances\/?$/, page: instancesPage, nav: "instances", title: "Instances" },
  { path: /^\/instances\/(\d+)\/?$/, page: instanceDetailPage, nav: "instances", title: "Instance" },
  { path: /^\/models\/?$/, page: modelsPage, nav: "models", title: "Models" },
  // a model identifier may hold dots: its page ends with '/' so the server still sees a page
  { path: /^\/models\/([^/]+)\/?$/, page: modelDetailPage, nav: "models", title: "Model" },
];

const main = document.getElementById("wb-main");
let generation = 0;
let cleanups = [];

/** Go to a console path (`/console/...`), adding a history entry unless `replace`. */
export function navigate(url, { replace = false, state = null } = {}) {
  if (replace) history.replaceState(state, "", url);
  else history.pushState(state, "", url);
  render({ focus: true });
}

function render({ focus = false } = {}) {
  const ours = ++generation;
  for (const fn of cleanups.splice(0)) {
    try {
      fn();
    } catch {
      // a page's cleanup failing must not stop the next page
    }
  }
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : "/";
  const route = ROUTES.find((r) => r.path.test(path));
  if (!route) {
    showShell(true, null);
    const view = h(
      "div",
      {},
      h("h1", { tabindex: "-1" }, "No such page"),
      h("p", { class: "wb-empty" }, "The console has no page at ", h("code", {}, location.pathname), ". ",
        h("a", { href: `${BASE}/overview` }, "Go to the overview"), "."),
    );
    main.replaceChildren(view);
    document.title = "No such page · workflow-backend console";
    return;
  }
  if (route.redirect) {
    navigate(BASE + route.redirect + location.search, { replace: true });
    return;
  }
  if (!route.open && !getToken()) {
    const next = location.pathname + location.search;
    navigate(`${BASE}/sign-in${next && route.nav ? `?next=${encodeURIComponent(next)}` : ""}`, {
      replace: true,
      state: history.state,
    });
    return;
  }
  showShell(!route.open, route.nav);
  document.title = `${route.title} · workflow-backend console`;
  const view = h("div", { class: "wb-view" });
  main.replaceChildren(view);
  const ctx = {
    params: path.match(route.path).slice(1).map(decodeURIComponent),
    search: new URLSearchParams(location.search),
    state: history.state || {},
    current: () => ours === generation,
    navigate: (url, options) => navigate(url, options),
    onLeave: (fn) => cleanups.push(fn),
    setTitle: (title) => {
      if (ours === generation) document.title = `${title} · workflow-backend console`;
    },
    rerender: () => {
      if (ours === generation) render();
    },
  };
  Promise.resolve(route.page(view, ctx))
    .catch((error) => {
      if (error && error.handled) return;
      if (ours !== generation) return;
      add(view, h("div", { class: "wb-notice wb-notice-error", role: "alert" }, String(error.message || error)));
    })
    .finally(() => {
      if (focus && ours === generation) {
        const heading = view.querySelector("h1");
        if (heading) {
          heading.setAttribute("tabindex", "-1");
          heading.focus({ preventScroll: true });
        }
      }
    });
}

function showShell(signedIn, nav) {
  document.querySelector(".wb-nav").hidden = !signedIn;
  document.querySelector(".wb-session").hidden = !signedIn;
  for (const a of document.querySelectorAll(".wb-nav a")) {
    if (a.dataset.nav === nav) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const claims = signedIn ? tokenClaims() : null;
  const who = document.querySelector(".wb-who");
  put(who);
  if (claims && claims.sub) {
    add(who, "Signed in as ", h("strong", {}, String(claims.sub)));
    if (claims.scope) who.title = `Scopes: ${claims.scope}`;
  }
}

function signOut(reason) {
  clearToken();
  navigate(`${BASE}/sign-in`, { state: { reason } });
}

function signInPage(view, ctx) {
  const reason = ctx.state.reason;
  const next = ctx.search.get("next");
  const error = h("p", { class: "wb-field-error", id: "token-error", role: "alert" });
  const input = h("input", {
    type: "password",
    name: "token",
    id: "token",
    required: true,
    spellcheck: "false",
    autocomplete: "off",
    "aria-describedby": "token-help token-error",
    placeholder: "eyJhbGciOiJIUzI1NiIs…",
  });
  const form = h(
    "form",
    { class: "wb-form wb-signin-form", novalidate: true },
    h("label", { for: "token" }, "Bearer token"),
    input,
    h(
      "p",
      { class: "wb-help", id: "token-help" },
      "Paste a token the service accepts, e.g. the output of ",
      h("code", {}, "workflow-backend token --sub me --scope admin"),
      ". It stays in this tab (sessionStorage) and is sent as ",
      h("code", {}, "Authorization: Bearer …"),
      " with every call, so the console can do only what the token allows.",
    ),
    error,
    h("div", { class: "wb-actions" }, h("button", { type: "submit", class: "wb-button wb-primary" }, "Sign in")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const token = input.value.trim().replace(/^Bearer\s+/i, "");
    if (!token) {
      error.textContent = "Paste a token first.";
      input.focus();
      return;
    }
    if (/\s/.test(token)) {
      error.textContent = "A token has no spaces or line breaks: paste it again, in one piece.";
      input.focus();
      return;
    }
    const claims = tokenClaims(token);
    if (claims && typeof claims.exp === "number" && claims.exp * 1000 < Date.now()) {
      error.textContent = "This token has expired: get a new one.";
      input.focus();
      return;
    }
    setToken(token);
    const target = next && next.startsWith(`${BASE}/`) && !next.startsWith(`${BASE}/sign-in`) ? next : `${BASE}/overview`;
    navigate(target);
  });
  add(view,
    h(
      "div",
      { class: "wb-signin" },
      h("h1", {}, "Sign in"),
      h("p", { class: "wb-lead" }, "The console shows and acts on messages, process instances and models through the service's public API."),
      reason ? h("div", { class: "wb-notice wb-notice-warn", role: "alert", id: "signin-reason" }, reason) : null,
      form,
    ),
  );
  if (!reason) input.focus();
}

setUnauthorizedHandler((reason) => {
  navigate(`${BASE}/sign-in?next=${encodeURIComponent(location.pathname + location.search)}`, {
    replace: true,
    state: { reason },
  });
});

document.getElementById("sign-out").addEventListener("click", () => signOut("You signed out: the token is no longer kept in this tab."));

// Same-origin console links are followed in the page (no reload); others behave as usual.
document.addEventListener("click", (event) => {
  if (event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const a = event.target.closest("a[href]");
  if (!a || a.hasAttribute("download") || (a.target && a.target !== "_self")) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(`${BASE}/`)) return;
  if (/\.[a-z0-9]+$/i.test(url.pathname.split("/").pop())) return; // an asset, not a page
  event.preventDefault();
  if (url.pathname === location.pathname && url.search === location.search && url.hash) {
    location.hash = url.hash;
    return;
  }
  navigate(url.pathname + url.search);
});

window.addEventListener("popstate", () => render({ focus: true }));

render();
