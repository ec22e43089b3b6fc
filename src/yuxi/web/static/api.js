// The API client: fetch wrapper, errors, and where the token is remembered.

import { state } from './state.js';
import { API, TOKEN_KEY } from './vocabulary.js';

export class ApiError extends Error {
  /** `details`: the error body's other fields (e.g. what an `already_decided` decided). */
  constructor(status, code, message, details = {}) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

let onUnauthorized = () => {};

/** What to do when the server stops accepting the signed-in user's token (app.js wires it). */
export function wireApi({ unauthorized }) {
  onUnauthorized = unauthorized;
}

/** A 401 while signed in ends the session. */
export function noteUnauthorized(status) {
  if (status === 401 && state.me) onUnauthorized();
}

export function apiUrl(path) {
  return new URL(API + path, document.baseURI).toString();
}

export function filePath(path) {
  return '/workspace/files/' + path.split('/').map(encodeURIComponent).join('/');
}

export function runPath(runId, tail = '') {
  return `/runs/${encodeURIComponent(runId)}${tail}`;
}

export function threadPath(threadId, tail = '') {
  return `/threads/${encodeURIComponent(threadId)}${tail}`;
}

export async function errorFrom(resp) {
  let code = `http_${resp.status}`;
  let message = `${resp.status} ${resp.statusText}`.trim();
  let details = {};
  try {
    const body = await resp.json();
    if (body?.error) {
      const { code: c, message: m, ...rest } = body.error;
      code = c || code;
      message = m || message;
      details = rest;
    }
  } catch {
    // not JSON
  }
  return new ApiError(resp.status, code, message, details);
}

export function describe(err) {
  if (err instanceof ApiError) return err.message;
  return err?.message || String(err);
}

/** Call the API as the signed-in user. Throws ApiError on any non-2xx answer. */
export async function api(method, path, { json, body, headers = {}, raw = false, signal } = {}) {
  const h = new Headers(headers);
  if (state.token) h.set('Authorization', `Bearer ${state.token}`);
  if (json !== undefined) {
    h.set('Content-Type', 'application/json');
    body = JSON.stringify(json);
  }
  let resp;
  try {
    resp = await fetch(apiUrl(path), { method, headers: h, body, signal, cache: 'no-store' });
  } catch (err) {
    if (err?.name === 'AbortError') throw err;
    throw new ApiError(0, 'network_error', 'Cannot reach the server.');
  }
  if (!resp.ok) {
    const error = await errorFrom(resp);
    noteUnauthorized(resp.status);
    throw error;
  }
  if (raw) return resp;
  if (resp.status === 204) return null;
  return resp.json();
}

/** The remembered token (localStorage); storage may be disabled, then nothing is remembered. */
export const tokenStore = {
  get() {
    try {
      return localStorage.getItem(TOKEN_KEY);
    } catch {
      return null;
    }
  },
  set(token) {
    try {
      localStorage.setItem(TOKEN_KEY, token);
    } catch {
      // storage disabled: the session simply is not remembered
    }
  },
  remove() {
    try {
      localStorage.removeItem(TOKEN_KEY);
    } catch {
      // storage disabled
    }
  },
};
