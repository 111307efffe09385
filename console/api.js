// The console's only way to the service: plain same-origin fetches to the public API with the
// operator's bearer token (kept in sessionStorage), so the console can do nothing the token
// can't.

const TOKEN_KEY = "wb-console.token";

export function getToken() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function clearToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** The token's claims (sub, scope, exp), read without checking the signature: display only. */
export function tokenClaims(token = getToken()) {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const text = atob(part.padEnd(part.length + ((4 - (part.length % 4)) % 4), "="));
    const claims = JSON.parse(text);
    return claims && typeof claims === "object" ? claims : null;
  } catch {
    return null;
  }
}

/** An answer that is not 2xx, or no answer at all (status 0). */
export class ApiError extends Error {
  constructor(status, problem, message) {
    super(message);
    this.status = status;
    this.problem = problem || {};
    this.code = this.problem.error_code || null;
    // true once the console has acted on it (a 401 went back to sign-in): show nothing more
    this.handled = false;
  }
}

let onUnauthorized = () => {};

/** What to do when an answer is 401: the console goes back to sign-in with the reason. */
export function setUnauthorizedHandler(handler) {
  onUnauthorized = handler;
}

/** `/v1.0/...` path segments: '/' in a model identifier is written ':' (SpiffArena's path). */
export function modifiedModel(identifier) {
  return String(identifier).replace(/\//g, ":");
}

export function seg(value) {
  return encodeURIComponent(String(value));
}

/** A model identifier as a path segment: `group:model` (':' kept as is). */
export function modelSeg(identifier) {
  return encodeURIComponent(modifiedModel(identifier)).replace(/%3A/gi, ":");
}

/** Instance id -> model identifier, learnt from the lists (the show path names the model). */
export const instanceModels = new Map();

export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

function headersFor(extra = {}) {
  const headers = { Accept: "application/json", ...extra };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  return headers;
}

async function send(path, init) {
  try {
    return await fetch(path, { ...init, cache: "no-store" });
  } catch {
    throw new ApiError(
      0,
      null,
      "The service cannot be reached: check that workflow-backend is running and that the network allows it, then try again.",
    );
  }
}

/** The ApiError of an answer that is not 2xx (a 401 goes back to sign-in). */
async function failure(response) {
  const problem = await readProblem(response);
  const error = new ApiError(response.status, problem, describe(response.status, problem));
  if (response.status === 401) {
    clearToken();
    error.handled = true;
    onUnauthorized(error.message);
  }
  return error;
}

/**
 * Call the API. `body` is sent as JSON unless `text` (a string, with `contentType`) is given.
 * Answers the parsed JSON (null for 204), or the Response itself with `raw: true`.
 */
export async function api(path, { method = "GET", body, text, contentType, raw = false } = {}) {
  const headers = headersFor();
  let payload;
  if (text !== undefined) {
    payload = text;
    headers["Content-Type"] = contentType || "text/plain";
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers["Content-Type"] = "application/json";
  }
  const response = await send(path, { method, headers, body: payload });
  if (response.ok) {
    if (raw) return response;
    if (response.status === 204) return null;
    const type = response.headers.get("Content-Type") || "";
    return type.includes("json") ? response.json() : response.text();
  }
  throw await failure(response);
}

/**
 * A GET for polling: answers `{changed, data, etag, key}`. `previous` is the last answer for the
 * same path: its ETag is sent as If-None-Match (a 304 is "unchanged"), and an answer whose JSON
 * is the same as before (compared as `keyOf(data)`, the text by default) is unchanged too, so
 * a page re-renders only when something changed.
 */
export async function apiFresh(path, previous = null, keyOf = null) {
  const extra = previous && previous.etag ? { "If-None-Match": previous.etag } : {};
  const response = await send(path, { method: "GET", headers: headersFor(extra) });
  if (response.status === 304 && previous) return { ...previous, changed: false };
  if (!response.ok) throw await failure(response);
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  const key = keyOf ? keyOf(data) : text;
  const etag = response.headers.get("ETag");
  if (previous && previous.key === key) return { ...previous, etag: etag || previous.etag, changed: false };
  return { changed: true, data, etag, key };
}

async function readProblem(response) {
  try {
    const text = await response.text();
    try {
      const parsed = JSON.parse(text);
      if (parsed && typeof parsed === "object") return parsed;
    } catch {
      // not JSON: keep the text as the detail
    }
    return { detail: text.trim().slice(0, 500) };
  } catch {
    return {};
  }
}

function describe(status, problem) {
  const detail = problem.detail || problem.message || "";
  if (status === 401) {
    return detail
      ? `The service refused the token: ${detail}`
      : "The service refused the token (it is missing, invalid or expired).";
  }
  if (status === 403) {
    const scope =
      problem.required_scope ||
      (Array.isArray(problem.required_scopes) ? problem.required_scopes.join(" or ") : null) ||
      (detail.match(/`([^`]+)`/) || [])[1];
    const lead = scope ? `Your token lacks scope ${scope}.` : "Your token lacks the scope this needs.";
    return detail ? `${lead} ${detail}` : lead;
  }
  if (status >= 500 && !detail) {
    return `The service answered ${status}: try again in a moment.`;
  }
  return detail || `The service answered ${status}.`;
}
