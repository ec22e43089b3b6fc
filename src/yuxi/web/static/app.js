// Yuxi web UI — one plain ES module, no dependencies, no build step.
//
// Safety rule for this file: user and model text only ever reaches the page through
// textContent / text nodes (see `el`), never through innerHTML.

const API = 'api/v1';
const TOKEN_KEY = 'yuxi.token';
const MEMORY_PATH = 'agents/MEMORY.md';
const SETTLED = new Set(['completed', 'failed', 'cancelled', 'interrupted']);
const ACTIVE = new Set(['pending', 'running']);
const STATUS_TEXT = {
  pending: 'Waiting for a worker…',
  running: 'Thinking…',
  interrupted: 'Waiting for your approval',
};

// ---------------------------------------------------------------------------------------------
// Small helpers

const $ = (id) => document.getElementById(id);

/** Create an element. Children that are strings become text nodes (never parsed as HTML). */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('on') && typeof value === 'function') {
      node.addEventListener(key.slice(2), value);
    } else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}

function newRequestId() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

function pretty(value) {
  if (value === undefined) return '';
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** Tool results arrive as JSON text; show them indented when they parse. */
function prettyText(text) {
  if (typeof text !== 'string') return pretty(text);
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'short' });
function formatTime(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? '' : timeFormat.format(date);
}

function byteLength(text) {
  return new TextEncoder().encode(text).length;
}

function storage(action, value) {
  try {
    if (action === 'get') return localStorage.getItem(TOKEN_KEY);
    if (action === 'set') localStorage.setItem(TOKEN_KEY, value);
    if (action === 'remove') localStorage.removeItem(TOKEN_KEY);
  } catch {
    // storage disabled: the session simply is not remembered
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Server-Sent Events over fetch() (EventSource cannot send an Authorization header)

/** An incremental parser of the text/event-stream format. */
export class SseParser {
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.buffer = '';
    this.lastEventId = '';
    this.resetFrame();
  }

  resetFrame() {
    this.data = [];
    this.eventType = '';
    this.hasData = false;
  }

  push(text) {
    this.buffer += text;
    for (;;) {
      const match = /\r\n|\n|\r/.exec(this.buffer);
      if (!match) return;
      // a lone CR at the very end may be the first half of a CRLF split across chunks
      if (match[0] === '\r' && match.index === this.buffer.length - 1) return;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      this.line(line);
    }
  }

  /** The stream ended: a trailing CR still ends its line; an unfinished frame is dropped. */
  end() {
    if (this.buffer.endsWith('\r')) this.line(this.buffer.slice(0, -1));
    this.buffer = '';
    this.resetFrame();
  }

  line(line) {
    if (line === '') {
      if (this.hasData) {
        this.onEvent({
          id: this.lastEventId,
          event: this.eventType || 'message',
          data: this.data.join('\n'),
        });
      }
      this.resetFrame();
      return;
    }
    if (line.startsWith(':')) return; // comment / keep-alive ping
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      this.data.push(value);
      this.hasData = true;
    } else if (field === 'event') {
      this.eventType = value;
    } else if (field === 'id' && !value.includes('\0')) {
      this.lastEventId = value;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// State and the API client

const state = {
  token: null,
  me: null,
  enableMemory: false,
  threads: [],
  threadId: null,
  viewGen: 0, // bumped whenever the transcript is re-targeted; stale async work checks it
  follow: null, // {runId, threadId, controller}
  awaiting: null, // run id waiting for an approval decision in the open thread
  toolCards: new Map(), // tool_call_id → card element
  memory: { etag: null, dirty: false, busy: false, loaded: false },
};

class ApiError extends Error {
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

function apiUrl(path) {
  return new URL(API + path, document.baseURI).toString();
}

function filePath(path) {
  return '/workspace/files/' + path.split('/').map(encodeURIComponent).join('/');
}

async function errorFrom(resp) {
  let code = `http_${resp.status}`;
  let message = `${resp.status} ${resp.statusText}`.trim();
  try {
    const body = await resp.json();
    if (body?.error) {
      code = body.error.code || code;
      message = body.error.message || message;
    }
  } catch {
    // not JSON
  }
  return new ApiError(resp.status, code, message);
}

/** Call the API as the signed-in user. Throws ApiError on any non-2xx answer. */
async function api(method, path, { json, body, headers = {}, raw = false, signal } = {}) {
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
    if (resp.status === 401 && state.me) sessionExpired();
    throw error;
  }
  if (raw) return resp;
  if (resp.status === 204) return null;
  return resp.json();
}

/**
 * Follow a run's events until it settles. Reconnects with Last-Event-ID when the connection
 * drops early. Resolves with the settled status, or null when aborted.
 */
async function streamRun(runId, onEvent, signal) {
  let lastId = null;
  let settled = null;
  let failures = 0;
  while (!settled && !signal.aborted) {
    const headers = { Accept: 'text/event-stream', Authorization: `Bearer ${state.token}` };
    if (lastId !== null) headers['Last-Event-ID'] = lastId;
    let progressed = false;
    try {
      const resp = await fetch(apiUrl(`/runs/${encodeURIComponent(runId)}/events`), {
        headers, signal, cache: 'no-store',
      });
      if (!resp.ok) {
        const error = await errorFrom(resp);
        if (resp.status === 401 && state.me) sessionExpired();
        if (resp.status < 500 && resp.status !== 429) throw error;
        throw Object.assign(error, { retry: true });
      }
      const parser = new SseParser((frame) => {
        const payload = parseJson(frame.data);
        if (!payload || typeof payload !== 'object' || !payload.type) return;
        lastId = frame.id || (payload.seq !== undefined ? String(payload.seq) : lastId);
        progressed = true;
        onEvent(payload);
        if (payload.type === 'run_status' && SETTLED.has(payload.data?.status)) {
          settled = payload.data.status;
        }
      });
      const reader = resp.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.push(decoder.decode(value, { stream: true }));
      }
      parser.push(decoder.decode());
      parser.end();
    } catch (err) {
      if (signal.aborted) return null;
      if (err instanceof ApiError && !err.retry) throw err;
    }
    if (settled || signal.aborted) break;
    // Ended before a settled status. The run may have been settled without a final event
    // (e.g. reconciled after a lost lease): ask once before reconnecting.
    try {
      const run = await api('GET', `/runs/${encodeURIComponent(runId)}`, { signal });
      if (SETTLED.has(run.status) && !progressed) return run.status;
    } catch (err) {
      if (signal.aborted) return null;
      if (err instanceof ApiError && err.status && err.status < 500) throw err;
    }
    failures = progressed ? 0 : failures + 1;
    if (failures > 10) throw new ApiError(0, 'stream_lost', 'Lost the connection to the run’s events.');
    await sleep(Math.min(5000, 250 * 2 ** failures), signal);
  }
  return signal.aborted ? null : settled;
}

/** All events of a settled run (the stream closes by itself after the replay). */
async function replayEvents(runId) {
  const events = [];
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 15000);
  try {
    await streamRun(runId, (ev) => events.push(ev), controller.signal);
  } finally {
    clearTimeout(timer);
  }
  return events;
}

// ---------------------------------------------------------------------------------------------
// Banner and busy state

function showError(message) {
  if (!state.me) return; // signed out: the sign-in form shows its own errors
  $('banner-text').textContent = message;
  $('banner').hidden = false;
}

function clearError() {
  $('banner').hidden = true;
  $('banner-text').textContent = '';
}

function describe(err) {
  if (err instanceof ApiError) return err.message;
  return err?.message || String(err);
}

// ---------------------------------------------------------------------------------------------
// Sign-in

async function signIn(token) {
  const errorLine = $('signin-error');
  errorLine.hidden = true;
  token = token.trim();
  if (!token) {
    errorLine.textContent = 'Enter your API token.';
    errorLine.hidden = false;
    return false;
  }
  $('sign-in').disabled = true;
  state.token = token;
  try {
    const me = await api('GET', '/me');
    const config = await api('GET', '/me/config');
    state.me = me;
    state.enableMemory = Boolean(config.enable_memory);
  } catch (err) {
    state.token = null;
    state.me = null;
    if (err instanceof ApiError && err.status === 401) storage('remove');
    errorLine.textContent = err instanceof ApiError && err.status === 401
      ? 'That token was not accepted. Check it and try again.'
      : `Could not sign in: ${describe(err)}`;
    errorLine.hidden = false;
    return false;
  } finally {
    $('sign-in').disabled = false;
  }
  storage('set', token);
  $('token-input').value = '';
  $('user-name').textContent = state.me.name;
  renderMemorySwitch();
  $('signin-view').hidden = true;
  $('app-view').hidden = false;
  clearError();
  await loadThreads();
  const wanted = new URLSearchParams(location.hash.slice(1)).get('thread');
  const first = state.threads.find((t) => t.thread_id === wanted) || state.threads[0];
  if (first) await selectThread(first.thread_id);
  else showEmptyConversation();
  $('message-input').focus();
  return true;
}

function signOut(message) {
  stopFollowing();
  state.viewGen += 1;
  storage('remove');
  Object.assign(state, {
    token: null, me: null, enableMemory: false, threads: [], threadId: null, awaiting: null,
  });
  state.toolCards = new Map();
  state.memory = { etag: null, dirty: false, busy: false, loaded: false };
  closeMemoryPanel();
  $('memory-text').value = '';
  $('thread-list').replaceChildren();
  $('transcript').replaceChildren();
  $('user-name').textContent = '';
  $('app-view').hidden = true;
  $('signin-view').hidden = false;
  history.replaceState(null, '', location.pathname + location.search);
  const errorLine = $('signin-error');
  errorLine.textContent = message || '';
  errorLine.hidden = !message;
  clearError();
  $('token-input').focus();
}

function sessionExpired() {
  signOut('Your token is no longer valid. Sign in again.');
}

// ---------------------------------------------------------------------------------------------
// Memory switch

function renderMemorySwitch() {
  const toggle = $('memory-toggle');
  toggle.checked = state.enableMemory;
  toggle.setAttribute('aria-checked', String(state.enableMemory));
  $('memory-state').textContent = state.enableMemory ? 'on' : 'off';
  $('memory-off-note').hidden = state.enableMemory;
}

async function onMemoryToggle() {
  const toggle = $('memory-toggle');
  const wanted = toggle.checked;
  toggle.disabled = true;
  toggle.dataset.saving = 'true';
  try {
    const config = await api('PUT', '/me/config', { json: { enable_memory: wanted } });
    state.enableMemory = Boolean(config.enable_memory);
  } catch (err) {
    showError(`Could not change the memory switch: ${describe(err)}`);
  } finally {
    toggle.disabled = false;
    delete toggle.dataset.saving;
    renderMemorySwitch();
  }
}

// ---------------------------------------------------------------------------------------------
// Threads

async function loadThreads() {
  try {
    const body = await api('GET', '/threads');
    state.threads = body.threads || [];
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return;
    showError(`Could not load your threads: ${describe(err)}`);
  }
  renderThreads();
}

function renderThreads() {
  const items = state.threads.map((t) => el('li', {},
    el('button', {
      type: 'button',
      class: 'thread-item',
      'data-testid': 'thread-item',
      'data-thread-id': t.thread_id,
      'aria-current': t.thread_id === state.threadId ? 'true' : null,
      title: t.title || 'New thread',
      onclick: () => { if (t.thread_id !== state.threadId) selectThread(t.thread_id); },
    },
    el('span', { class: 'thread-name', 'data-testid': 'thread-title-text' }, t.title || 'New thread'),
    el('time', { class: 'thread-time', datetime: t.updated_at }, formatTime(t.updated_at)))));
  $('thread-list').replaceChildren(...items);
  $('thread-empty').hidden = state.threads.length > 0;
  const current = state.threads.find((t) => t.thread_id === state.threadId);
  $('thread-title').textContent = current ? (current.title || 'New thread') : 'New conversation';
  $('archive-thread').hidden = !current;
  $('delete-thread').hidden = !current;
}

function showEmptyConversation() {
  state.viewGen += 1;
  stopFollowing();
  state.threadId = null;
  state.awaiting = null;
  state.toolCards = new Map();
  $('transcript').replaceChildren(el('div', { class: 'empty', 'data-testid': 'empty-transcript' },
    el('p', { class: 'empty-title' }, 'Start a conversation'),
    el('p', { class: 'muted' },
      'Try “remember: I drink oolong tea”, “what do you remember?” or “write file notes/a.md: hi”.')));
  renderThreads();
  updateComposer();
}

async function createThread() {
  const thread = await api('POST', '/threads', { json: {} });
  state.threads = [thread, ...state.threads.filter((t) => t.thread_id !== thread.thread_id)];
  return thread;
}

async function onNewThread() {
  const button = $('new-thread');
  button.disabled = true;
  try {
    const thread = await createThread();
    await selectThread(thread.thread_id);
    $('message-input').focus();
  } catch (err) {
    showError(`Could not create a thread: ${describe(err)}`);
  } finally {
    button.disabled = false;
  }
}

async function selectThread(threadId) {
  const gen = ++state.viewGen;
  stopFollowing();
  state.threadId = threadId;
  state.awaiting = null;
  state.toolCards = new Map();
  history.replaceState(null, '', `#thread=${encodeURIComponent(threadId)}`);
  renderThreads();
  updateComposer();
  const transcript = $('transcript');
  transcript.replaceChildren(el('p', { class: 'muted loading' }, 'Loading…'));
  transcript.dataset.ready = 'false';
  let detail;
  try {
    detail = await api('GET', `/threads/${encodeURIComponent(threadId)}`);
  } catch (err) {
    if (gen !== state.viewGen) return;
    if (err instanceof ApiError && err.status === 404) {
      state.threads = state.threads.filter((t) => t.thread_id !== threadId);
      showEmptyConversation();
      showError('That thread no longer exists.');
    } else {
      transcript.replaceChildren();
      showError(`Could not load the thread: ${describe(err)}`);
    }
    return;
  }
  if (gen !== state.viewGen) return;
  await renderHistory(detail, gen);
}

/**
 * Render a thread's stored messages. Tool calls are stored as messages without the tool's
 * name and arguments, so those come from replaying the (settled) runs' events.
 */
async function renderHistory(detail, gen) {
  const messages = detail.messages || [];
  const lastRunId = [...messages].reverse().find((m) => m.run_id)?.run_id || null;
  let lastRun = null;
  if (lastRunId) {
    try {
      lastRun = await api('GET', `/runs/${encodeURIComponent(lastRunId)}`);
    } catch {
      lastRun = null;
    }
  }
  if (gen !== state.viewGen) return;
  const live = lastRun && ACTIVE.has(lastRun.status) ? lastRun.run_id : null;

  const toolRuns = [...new Set(messages
    .filter((m) => m.message_type !== 'text' && m.run_id && m.run_id !== live)
    .map((m) => m.run_id))];
  const replays = new Map(await Promise.all(toolRuns.map(async (runId) => {
    try {
      return [runId, await replayEvents(runId)];
    } catch {
      return [runId, []];
    }
  })));
  if (gen !== state.viewGen) return;

  // Per run: groups of consecutive tool_start events (one per tool-calling message) and the
  // tool_end events in order (one per tool_result message).
  const perRun = new Map();
  for (const [runId, events] of replays) {
    const groups = [];
    const ends = [];
    let previous = null;
    for (const ev of events) {
      if (ev.type === 'tool_start') {
        if (previous !== 'tool_start') groups.push([]);
        groups[groups.length - 1].push(ev.data);
      } else if (ev.type === 'tool_end') {
        ends.push(ev.data);
      }
      previous = ev.type;
    }
    perRun.set(runId, { groups, ends, group: 0, end: 0 });
  }

  const transcript = $('transcript');
  transcript.replaceChildren();
  state.toolCards = new Map();
  for (const m of messages) {
    if (live && m.run_id === live && m.role !== 'user') continue; // re-rendered live below
    const run = perRun.get(m.run_id);
    if (m.message_type === 'text' && (m.role === 'user' || m.role === 'assistant')) {
      transcript.append(messageBubble(m.role, m.content, { runId: m.run_id }));
    } else if (m.message_type === 'tool_call') {
      if (m.content && m.content.trim()) {
        transcript.append(messageBubble('assistant', m.content, { runId: m.run_id, note: true }));
      }
      const group = run ? run.groups[run.group++] || [] : [];
      for (const start of group) transcript.append(toolCard(start, m.run_id));
    } else if (m.message_type === 'tool_result') {
      const end = run ? run.ends[run.end++] : undefined;
      if (end) {
        finishToolCard(end, m.run_id);
      } else {
        const parsed = parseJson(m.content);
        finishToolCard({
          tool_call_id: `message-${m.message_id}`,
          name: 'tool',
          status: parsed?.status === 'error' ? 'error' : 'success',
          result: m.content,
          truncated: false,
        }, m.run_id);
      }
    }
  }
  if (!messages.length) {
    transcript.append(el('div', { class: 'empty', 'data-testid': 'empty-transcript' },
      el('p', { class: 'muted' }, 'No messages yet. Say something below.')));
  }
  transcript.dataset.ready = 'true';

  if (lastRun?.status === 'interrupted') {
    markPending(lastRun.run_id);
    showApproval(lastRun.run_id, lastRun.output?.interrupt);
  } else if (lastRun?.status === 'failed') {
    transcript.append(runError(lastRun.error));
  }
  updateComposer();
  scrollToBottom(true);
  if (live) followRun(live);
}

async function onArchive() {
  const id = state.threadId;
  if (!id) return;
  try {
    await api('POST', `/threads/${encodeURIComponent(id)}/archive`);
    state.threads = state.threads.filter((t) => t.thread_id !== id);
    showEmptyConversation();
  } catch (err) {
    showError(`Could not archive the thread: ${describe(err)}`);
  }
}

async function onDelete() {
  const id = state.threadId;
  if (!id) return;
  const title = state.threads.find((t) => t.thread_id === id)?.title || 'this thread';
  if (!window.confirm(`Delete “${title}”? This cannot be undone.`)) return;
  try {
    await api('DELETE', `/threads/${encodeURIComponent(id)}`);
    state.threads = state.threads.filter((t) => t.thread_id !== id);
    showEmptyConversation();
  } catch (err) {
    showError(`Could not delete the thread: ${describe(err)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Transcript pieces

function isNearBottom() {
  const t = $('transcript');
  return t.scrollHeight - t.scrollTop - t.clientHeight < 80;
}

function scrollToBottom(force = false) {
  const t = $('transcript');
  if (force || isNearBottom()) t.scrollTop = t.scrollHeight;
}

function appendToTranscript(node) {
  const stick = isNearBottom();
  const t = $('transcript');
  t.querySelector('[data-testid="empty-transcript"]')?.remove();
  t.append(node);
  if (stick) scrollToBottom(true);
  return node;
}

function messageBubble(role, text, { runId, note = false, streaming = false } = {}) {
  const bodyId = role === 'assistant' && !note ? 'assistant-reply' : 'message-text';
  const body = el('div', { class: 'bubble-text', 'data-testid': bodyId }, text);
  return el('div', {
    class: `message ${role}${note ? ' note' : ''}`,
    'data-testid': 'message',
    'data-role': role,
    'data-run-id': runId,
    'data-streaming': streaming ? 'true' : null,
  },
  el('div', { class: 'bubble-role' }, role === 'user' ? 'You' : 'Yuxi'),
  body);
}

const TOOL_STATUS_TEXT = {
  running: 'running…',
  pending: 'awaiting approval',
  success: 'success',
  error: 'error',
};

function toolCard(start, runId) {
  const name = String(start.name || 'tool');
  const card = el('div', {
    class: 'tool-event',
    'data-testid': 'tool-event',
    'data-tool-name': name,
    'data-tool-call-id': start.tool_call_id || '',
    'data-status': 'running',
    'data-run-id': runId,
  },
  el('div', { class: 'tool-head' },
    el('span', { class: 'tool-icon', 'aria-hidden': 'true' }, '⚙'),
    el('span', { class: 'tool-label' }, 'Tool'),
    el('code', { class: 'tool-name', 'data-testid': 'tool-name' }, name),
    el('span', { class: 'spacer' }),
    el('span', { class: 'tool-status', 'data-testid': 'tool-status' }, TOOL_STATUS_TEXT.running)),
  el('div', { class: 'tool-section-label' }, 'Arguments'),
  el('pre', { class: 'tool-args', 'data-testid': 'tool-args' }, pretty(start.args ?? {})));
  if (start.tool_call_id) state.toolCards.set(start.tool_call_id, card);
  return card;
}

function setToolStatus(card, status) {
  card.dataset.status = status;
  card.querySelector('[data-testid="tool-status"]').textContent = TOOL_STATUS_TEXT[status] || status;
}

/** Complete a tool card (the one started earlier, possibly by another run of the thread). */
function finishToolCard(end, runId) {
  let card = end.tool_call_id ? state.toolCards.get(end.tool_call_id) : null;
  if (!card) {
    card = toolCard({ tool_call_id: end.tool_call_id, name: end.name, args: undefined }, runId);
    card.querySelector('.tool-args')?.previousElementSibling?.remove();
    card.querySelector('.tool-args')?.remove();
    appendToTranscript(card);
  }
  const status = end.status === 'error' ? 'error' : 'success';
  setToolStatus(card, status);
  card.querySelector('[data-testid="tool-error"]')?.remove();
  card.querySelector('[data-testid="tool-result"]')?.remove();
  const parsed = parseJson(end.result);
  if (status === 'error') {
    const message = parsed && typeof parsed === 'object'
      ? parsed.error || parsed.message || parsed.code
      : end.result;
    card.append(el('p', { class: 'tool-error', 'data-testid': 'tool-error' },
      String(message || 'The tool reported an error.')));
  }
  let summary = 'Result';
  if (parsed && typeof parsed === 'object' && !Array.isArray(parsed) && parsed.status) {
    summary = `Result: ${parsed.status}`;
  }
  card.append(el('details', { class: 'tool-result', 'data-testid': 'tool-result' },
    el('summary', {}, summary, end.truncated ? ' (truncated)' : ''),
    el('pre', { 'data-testid': 'tool-result-text' }, prettyText(end.result ?? ''))));
  return card;
}

/** Tool cards of an interrupted run that did not run yet wait for the user's decision. */
function markPending(runId) {
  for (const card of $('transcript').querySelectorAll('[data-testid="tool-event"]')) {
    if (card.dataset.runId === runId && card.dataset.status === 'running') {
      setToolStatus(card, 'pending');
    }
  }
}

function runError(error) {
  const text = error?.message || error?.code || 'The run failed.';
  return el('div', { class: 'run-error', 'data-testid': 'run-error', role: 'alert' },
    el('strong', {}, 'Run failed: '), String(text));
}

function actionRequests(request) {
  if (!request || typeof request !== 'object') return [];
  if (Array.isArray(request.action_requests)) return request.action_requests;
  if (Array.isArray(request.interrupts)) {
    return request.interrupts.flatMap((i) => (Array.isArray(i?.action_requests) ? i.action_requests : []));
  }
  return [];
}

function showApproval(runId, request) {
  const transcript = $('transcript');
  for (const old of transcript.querySelectorAll('[data-testid="approval-card"]')) {
    if (old.dataset.runId === runId) old.remove();
  }
  const actions = actionRequests(request);
  const approve = el('button', { type: 'button', class: 'primary', 'data-testid': 'approve' }, 'Approve');
  const reject = el('button', { type: 'button', class: 'danger', 'data-testid': 'reject' }, 'Reject');
  const status = el('p', { class: 'approval-status muted small', 'data-testid': 'approval-status' });
  const card = el('div', {
    class: 'approval-card',
    'data-testid': 'approval-card',
    'data-run-id': runId,
    'data-state': 'pending',
    role: 'group',
    'aria-label': 'Approval required',
  },
  el('div', { class: 'approval-title' }, 'Approval needed'),
  el('p', { class: 'small' }, actions.length === 1
    ? 'The assistant wants to run this action:'
    : 'The assistant wants to run these actions:'),
  ...actions.map((a) => el('div', { class: 'approval-action', 'data-testid': 'approval-action' },
    el('code', { class: 'tool-name', 'data-testid': 'approval-tool' }, String(a?.name || 'tool')),
    el('pre', { class: 'tool-args', 'data-testid': 'approval-args' }, pretty(a?.args ?? {})))),
  actions.length ? null : el('pre', { class: 'tool-args' }, pretty(request)),
  el('div', { class: 'approval-buttons' }, approve, reject),
  status);
  approve.addEventListener('click', () => decide(card, runId, 'approve'));
  reject.addEventListener('click', () => decide(card, runId, 'reject'));
  state.awaiting = runId;
  appendToTranscript(card);
  updateComposer();
  scrollToBottom(true);
  return card;
}

async function decide(card, runId, decision) {
  const buttons = card.querySelectorAll('button');
  const status = card.querySelector('[data-testid="approval-status"]');
  for (const b of buttons) b.disabled = true;
  status.textContent = decision === 'approve' ? 'Approving…' : 'Rejecting…';
  let run;
  try {
    run = await api('POST', `/runs/${encodeURIComponent(runId)}/resume`, { json: { decision } });
  } catch (err) {
    for (const b of buttons) b.disabled = false;
    status.textContent = '';
    showError(`Could not send your decision: ${describe(err)}`);
    if (err instanceof ApiError && err.status === 409 && state.threadId) selectThread(state.threadId);
    return;
  }
  card.dataset.state = decision === 'approve' ? 'approved' : 'rejected';
  card.querySelector('.approval-title').textContent = decision === 'approve' ? 'Approved' : 'Rejected';
  card.querySelector('.approval-buttons').remove();
  status.textContent = decision === 'approve' ? 'Approved — resuming.' : 'Rejected — resuming.';
  if (state.awaiting === runId) state.awaiting = null;
  followRun(run.run_id);
}

// ---------------------------------------------------------------------------------------------
// Following a run live

/** Renders one run's events into the open transcript. */
class RunRenderer {
  constructor(runId) {
    this.runId = runId;
    this.bubble = null;
    this.text = '';
    this.sawInterrupt = false;
  }

  ensureBubble() {
    if (!this.bubble) {
      this.bubble = appendToTranscript(
        messageBubble('assistant', '', { runId: this.runId, streaming: true }));
      this.text = '';
    }
    return this.bubble;
  }

  setText(text) {
    const stick = isNearBottom();
    this.ensureBubble().querySelector('.bubble-text').textContent = text;
    if (stick) scrollToBottom(true);
  }

  /** Text streamed before a tool call belongs to that tool-calling message: keep it as a note. */
  closeBubble() {
    if (!this.bubble) return;
    if (this.text.trim()) {
      this.bubble.classList.add('note');
      delete this.bubble.dataset.streaming;
      this.bubble.querySelector('.bubble-text').dataset.testid = 'message-text';
    } else {
      this.bubble.remove();
    }
    this.bubble = null;
    this.text = '';
  }

  /** A retried attempt replays the run from the start: drop what the last attempt showed. */
  reset() {
    for (const node of $('transcript').querySelectorAll('[data-run-id]')) {
      if (node.dataset.runId === this.runId && node.dataset.role !== 'user') node.remove();
    }
    this.bubble = null;
    this.text = '';
  }

  handle(ev) {
    const data = ev.data || {};
    switch (ev.type) {
      case 'run_status':
        if (data.status === 'running' && Number(data.attempt) > 1) this.reset();
        setRunStatus(data.status);
        if (data.status === 'failed') {
          this.closeBubble();
          appendToTranscript(runError(data.error));
        } else if (data.status === 'cancelled') {
          this.closeBubble();
          appendToTranscript(el('div', { class: 'run-note muted small', 'data-testid': 'run-cancelled' },
            'Run cancelled.'));
        }
        break;
      case 'token':
        this.ensureBubble();
        this.text += String(data.text ?? '');
        this.setText(this.text);
        break;
      case 'message':
        if (data.role && data.role !== 'assistant') break;
        this.setText(String(data.content ?? ''));
        delete this.bubble.dataset.streaming;
        this.bubble.dataset.messageId = String(data.message_id ?? '');
        this.bubble = null;
        this.text = '';
        break;
      case 'tool_start':
        this.closeBubble();
        appendToTranscript(toolCard(data, this.runId));
        break;
      case 'tool_end':
        this.closeBubble();
        finishToolCard(data, this.runId);
        if (data.name === 'remember_memory' && data.status === 'success') memoryChangedOnServer();
        break;
      case 'interrupt':
        this.closeBubble();
        this.sawInterrupt = true;
        markPending(this.runId);
        showApproval(this.runId, data.request);
        break;
      default:
        break; // memory_snapshot and future event types need no rendering
    }
  }

  async settle(status) {
    if (this.bubble) {
      // streamed text without a final message (failed or cancelled mid-way)
      delete this.bubble.dataset.streaming;
      this.bubble.classList.add('incomplete');
      this.bubble = null;
    }
    if (status === 'interrupted' && !this.sawInterrupt) {
      try {
        const run = await api('GET', `/runs/${encodeURIComponent(this.runId)}`);
        markPending(this.runId);
        showApproval(this.runId, run.output?.interrupt);
      } catch (err) {
        showError(`The run is waiting for approval, but it could not be loaded: ${describe(err)}`);
      }
    }
  }
}

function stopFollowing() {
  if (state.follow) {
    state.follow.controller.abort();
    state.follow = null;
  }
  setRunStatus(null);
}

function followRun(runId) {
  stopFollowing();
  const controller = new AbortController();
  const follow = { runId, threadId: state.threadId, controller };
  state.follow = follow;
  const renderer = new RunRenderer(runId);
  setRunStatus('pending');
  updateComposer();
  streamRun(runId, (ev) => renderer.handle(ev), controller.signal)
    .then(async (status) => {
      if (controller.signal.aborted || status === null) return;
      await renderer.settle(status);
    })
    .catch((err) => {
      if (controller.signal.aborted) return;
      showError(`Lost track of the run: ${describe(err)}. Reopen the thread to see its result.`);
    })
    .finally(() => {
      if (state.follow === follow) {
        state.follow = null;
        setRunStatus(null);
        updateComposer();
        loadThreads();
      }
    });
}

function setRunStatus(status) {
  const bar = $('run-status');
  if (!status || !ACTIVE.has(status)) {
    bar.hidden = true;
    bar.dataset.status = status || 'idle';
    return;
  }
  bar.hidden = false;
  bar.dataset.status = status;
  $('run-status-text').textContent = STATUS_TEXT[status] || status;
}

function updateComposer() {
  const busy = Boolean(state.follow && state.follow.threadId === state.threadId);
  const waiting = Boolean(state.awaiting);
  const send = $('send');
  send.disabled = !state.token || busy || waiting;
  const input = $('message-input');
  input.placeholder = waiting
    ? 'Approve or reject the pending action first.'
    : 'Message Yuxi… (Enter to send, Shift+Enter for a new line)';
  $('composer').dataset.state = waiting ? 'awaiting-approval' : busy ? 'busy' : 'idle';
}

async function onSend(event) {
  event.preventDefault();
  const input = $('message-input');
  const text = input.value;
  if (!text.trim() || $('send').disabled) return;
  $('send').disabled = true;
  clearError();
  let threadId = state.threadId;
  try {
    if (!threadId) {
      const thread = await createThread();
      await selectThread(thread.thread_id);
      threadId = thread.thread_id;
    }
  } catch (err) {
    showError(`Could not create a thread: ${describe(err)}`);
    updateComposer();
    return;
  }
  const bubble = appendToTranscript(messageBubble('user', text, {}));
  bubble.dataset.pending = 'true';
  input.value = '';
  scrollToBottom(true);
  let run;
  try {
    run = await api('POST', `/threads/${encodeURIComponent(threadId)}/runs`, {
      json: { input: text, request_id: newRequestId() },
    });
  } catch (err) {
    bubble.remove();
    if (!input.value) input.value = text;
    updateComposer();
    if (err instanceof ApiError && err.status === 409) {
      showError(`Not sent: ${describe(err)}`);
      if (state.threadId === threadId) selectThread(threadId);
    } else if (!(err instanceof ApiError && err.status === 401)) {
      showError(`Not sent: ${describe(err)}`);
    }
    return;
  }
  if (state.threadId !== threadId) return;
  delete bubble.dataset.pending;
  bubble.dataset.runId = run.run_id;
  followRun(run.run_id);
  loadThreads();
}

async function onCancelRun() {
  const runId = state.follow?.runId;
  if (!runId) return;
  try {
    await api('POST', `/runs/${encodeURIComponent(runId)}/cancel`);
    $('run-status-text').textContent = 'Stopping…';
  } catch (err) {
    showError(`Could not stop the run: ${describe(err)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Memory panel

function setMemoryStatus(text) {
  $('memory-status').textContent = text;
}

function setMemoryBusy(busy) {
  state.memory.busy = busy;
  for (const id of ['memory-save', 'memory-clear', 'memory-reload', 'memory-conflict-reload']) {
    $(id).disabled = busy;
  }
  $('memory-panel').dataset.busy = busy ? 'true' : 'false';
}

function openMemoryPanel() {
  $('memory-panel').hidden = false;
  $('memory-panel-button').setAttribute('aria-expanded', 'true');
  $('app-view').classList.add('with-panel');
  loadMemory().then(() => $('memory-text').focus());
}

function closeMemoryPanel() {
  $('memory-panel').hidden = true;
  $('memory-panel-button').setAttribute('aria-expanded', 'false');
  $('app-view').classList.remove('with-panel');
}

async function loadMemory() {
  setMemoryBusy(true);
  $('memory-panel').dataset.loaded = 'false';
  try {
    const resp = await api('GET', filePath(MEMORY_PATH), { raw: true });
    const text = await resp.text();
    $('memory-text').value = text;
    state.memory.etag = resp.headers.get('ETag');
    setMemoryStatus(text ? `Loaded · ${byteLength(text)} bytes` : 'Loaded · the file is empty');
  } catch (err) {
    if (err instanceof ApiError && (err.code === 'file_not_found' || err.status === 404)) {
      $('memory-text').value = '';
      state.memory.etag = null;
      setMemoryStatus('No memory file yet.');
    } else {
      setMemoryStatus(`Could not load: ${describe(err)}`);
      return;
    }
  } finally {
    setMemoryBusy(false);
  }
  state.memory.dirty = false;
  state.memory.loaded = true;
  $('memory-conflict').hidden = true;
  $('memory-panel').dataset.loaded = 'true';
  $('memory-panel').dataset.dirty = 'false';
}

async function writeMemory(text, doneMessage) {
  setMemoryBusy(true);
  $('memory-conflict').hidden = true;
  const headers = { 'Content-Type': 'text/plain; charset=utf-8' };
  if (state.memory.etag) headers['If-Match'] = state.memory.etag;
  try {
    const resp = await api('PUT', filePath(MEMORY_PATH), { body: text, headers, raw: true });
    state.memory.etag = resp.headers.get('ETag') || state.memory.etag;
    state.memory.dirty = false;
    $('memory-panel').dataset.dirty = 'false';
    $('memory-text').value = text;
    setMemoryStatus(doneMessage);
  } catch (err) {
    if (err instanceof ApiError && err.status === 412) {
      $('memory-conflict').hidden = false;
      setMemoryStatus('Not saved (conflict).');
    } else {
      setMemoryStatus(`Not saved: ${describe(err)}`);
    }
  } finally {
    setMemoryBusy(false);
  }
}

function onMemorySave() {
  const text = $('memory-text').value;
  writeMemory(text, `Saved · ${byteLength(text)} bytes`);
}

function onMemoryClear() {
  writeMemory('', 'Cleared · the file is now empty');
}

/** The assistant remembered something: refresh the open panel unless the user is editing. */
function memoryChangedOnServer() {
  if ($('memory-panel').hidden || state.memory.busy) return;
  if (state.memory.dirty) {
    setMemoryStatus('The assistant updated MEMORY.md. Reload to see it (your edits would be replaced).');
  } else {
    loadMemory();
  }
}

// ---------------------------------------------------------------------------------------------
// Wiring

function wire() {
  $('signin-form').addEventListener('submit', (e) => {
    e.preventDefault();
    signIn($('token-input').value);
  });
  $('sign-out').addEventListener('click', () => signOut());
  $('banner-close').addEventListener('click', clearError);
  $('memory-toggle').addEventListener('change', onMemoryToggle);
  $('new-thread').addEventListener('click', onNewThread);
  $('archive-thread').addEventListener('click', onArchive);
  $('delete-thread').addEventListener('click', onDelete);
  $('composer').addEventListener('submit', onSend);
  $('message-input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('cancel-run').addEventListener('click', onCancelRun);
  $('memory-panel-button').addEventListener('click', () => {
    if ($('memory-panel').hidden) openMemoryPanel();
    else closeMemoryPanel();
  });
  $('memory-close').addEventListener('click', closeMemoryPanel);
  $('memory-reload').addEventListener('click', loadMemory);
  $('memory-conflict-reload').addEventListener('click', loadMemory);
  $('memory-save').addEventListener('click', onMemorySave);
  $('memory-clear').addEventListener('click', onMemoryClear);
  $('memory-text').addEventListener('input', () => {
    state.memory.dirty = true;
    $('memory-panel').dataset.dirty = 'true';
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && !$('memory-panel').hidden) closeMemoryPanel();
  });
}

function start() {
  wire();
  updateComposer();
  // A token in the address bar (the login link `make run` prints) is taken once and removed
  // from the URL and the history entry at once.
  const params = new URLSearchParams(location.search);
  const fromUrl = params.get('token');
  if (params.has('token')) {
    params.delete('token');
    const query = params.toString();
    history.replaceState(null, '', location.pathname + (query ? `?${query}` : '') + location.hash);
  }
  const token = fromUrl || storage('get');
  document.body.dataset.ready = 'true';
  if (token) {
    $('token-input').value = token;
    signIn(token);
  } else {
    $('token-input').focus();
  }
}

// exposed for the browser tests of the stream parser
window.YuxiSse = { SseParser };

start();
