// Every request of the page: the token (typed by the operator, kept in this tab's sessionStorage, sent only as
// `Authorization: Bearer`, never a cookie), a 401 that asks for it once, and whether the translator answers.

import { askToken } from "./dialogs.js";

const KEY = "strait.cockpit.token";
const listeners = new Set();
let declined = false; // the operator cancelled the question for a read: polls stop asking until "Token…"
let reachable = { ok: true, since: null, error: null };

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

export function token() {
  return sessionStorage.getItem(KEY);
}

export function forgetToken() {
  sessionStorage.removeItem(KEY);
}

/** Ask for the token now (the "Token…" button); true when one was given. */
export async function enterToken() {
  const typed = await askToken("Reads this translator protects, and every action, need its token.");
  if (typed) sessionStorage.setItem(KEY, typed);
  declined = false;
  return Boolean(typed);
}

/** Called with {ok, since, error} whenever the translator starts or stops answering. */
export function onReachability(listener) {
  listeners.add(listener);
  listener(reachable);
}

function setReachable(ok, error) {
  if (ok === reachable.ok) return;
  reachable = { ok, since: Date.now(), error };
  for (const listener of listeners) listener(reachable);
}

async function send(method, path, body) {
  const headers = { Accept: "application/json" };
  const bearer = token();
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit",
      cache: "no-store",
    });
  } catch (error) {
    setReachable(false, String(error));
    throw new ApiError(0, "the translator does not answer");
  }
  setReachable(true, null);
  return response;
}

async function problem(response) {
  try {
    const body = await response.json();
    return body.detail || body.title || response.statusText;
  } catch {
    return response.statusText;
  }
}

/** The JSON answer, asking for the token on a 401 (an action always; a read until the operator declined once);
 * ApiError otherwise. */
export async function request(method, path, body) {
  let response = await send(method, path, body);
  if (response.status === 401 && (method !== "GET" || !declined)) {
    const typed = await askToken(await problem(response));
    if (typed) {
      sessionStorage.setItem(KEY, typed);
      declined = false;
      response = await send(method, path, body);
    } else if (method === "GET") {
      declined = true;
    }
  }
  if (!response.ok) throw new ApiError(response.status, await problem(response));
  return response.json();
}

export const get = (path) => request("GET", path);
export const post = (path, body) => request("POST", path, body);
