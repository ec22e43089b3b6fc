// The one store. State lives here and changes only through the actions exported below; every
// other module reads `state` (read-only) or subscribes to the keys it renders.

// The raw file as last loaded (`text`, `etag`); the raw editor's draft is `dirty` when it differs
// from what it was based on, and `draftEtag` is the version that draft started from (a save sends
// it as If-Match, so a draft never silently overwrites a newer file).
const INITIAL_MEMORY = Object.freeze({
  etag: null, text: '', draftEtag: null, dirty: false, busy: false, loaded: false,
});

const store = {
  token: null,
  me: null,
  enableMemory: false,
  threads: Object.freeze([]),
  showArchived: false, // the sidebar lists archived threads instead of the ordinary ones
  showTrash: false, // the sidebar shows the trash (deleted threads) instead of any list
  trash: null, // GET /trash: {trash_days, threads}, or null before loading
  threadId: null,
  viewGen: 0, // bumped whenever the transcript is re-targeted; stale async work checks it
  follow: null, // {runId, threadId, controller}: the run followed live, if any
  awaiting: null, // run id waiting for an approval decision in the open thread
  memory: INITIAL_MEMORY, // the Memory panel's file: {etag, text, draftEtag, dirty, busy, loaded}
  memoryView: null, // GET /memory: {etag, size, limits, entries, lint}, or null before loading
  memoryMode: 'entries', // the panel's view: entries | raw | versions
};

/** Read-only view of the store: writing to it throws. */
export const state = new Proxy(store, {
  set(_, key) { throw new TypeError(`state.${String(key)} changes only through state.js actions`); },
  deleteProperty(_, key) { throw new TypeError(`state.${String(key)} cannot be deleted`); },
  defineProperty(_, key) { throw new TypeError(`state.${String(key)} cannot be defined`); },
});

const listeners = [];

/** Call `fn(state)` after any action that changed one of `keys`. Returns an unsubscribe. */
export function subscribe(keys, fn) {
  const entry = { keys: new Set(keys), fn };
  listeners.push(entry);
  return () => listeners.splice(listeners.indexOf(entry), 1);
}

function update(patch) {
  const changed = Object.keys(patch).filter((key) => store[key] !== patch[key]);
  if (!changed.length) return;
  for (const key of changed) store[key] = patch[key];
  for (const { keys, fn } of [...listeners]) {
    if (changed.some((key) => keys.has(key))) fn(state);
  }
}

// -- session ------------------------------------------------------------------------------------

export function setToken(token) {
  update({ token: token || null });
}

export function signedIn(me, enableMemory) {
  update({ me: Object.freeze({ ...me }), enableMemory: Boolean(enableMemory) });
}

/** Forget everything about the user; any async work of the old view becomes stale. */
export function signedOut() {
  update({
    token: null,
    me: null,
    enableMemory: false,
    threads: Object.freeze([]),
    showArchived: false,
    showTrash: false,
    trash: null,
    threadId: null,
    viewGen: store.viewGen + 1,
    follow: null,
    awaiting: null,
    memory: INITIAL_MEMORY,
    memoryView: null,
    memoryMode: 'entries',
  });
}

export function setEnableMemory(enabled) {
  update({ enableMemory: Boolean(enabled) });
}

// -- threads ------------------------------------------------------------------------------------

export function setThreads(threads) {
  update({ threads: Object.freeze(threads.map((t) => Object.freeze({ ...t }))) });
}

/** A thread's new summary (renamed, hidden from recall) in place, keeping the list's order. */
export function replaceThread(thread) {
  setThreads(store.threads.map((t) => (t.thread_id === thread.thread_id ? thread : t)));
}

export function setShowArchived(show) {
  update({ showArchived: Boolean(show) });
}

export function setShowTrash(show) {
  update({ showTrash: Boolean(show) });
}

/** The trash as the server listed it ({trash_days, threads}), or null (not loaded). */
export function setTrash(trash) {
  update({
    trash: trash ? Object.freeze({
      trash_days: trash.trash_days,
      threads: Object.freeze((trash.threads || []).map((t) => Object.freeze({ ...t }))),
    }) : null,
  });
}

export function addThread(thread) {
  setThreads([thread, ...store.threads.filter((t) => t.thread_id !== thread.thread_id)]);
}

export function removeThread(threadId) {
  setThreads(store.threads.filter((t) => t.thread_id !== threadId));
}

/** Point the transcript at a thread (or at none). Returns the new view generation. */
export function openThread(threadId) {
  update({ threadId: threadId || null, awaiting: null, viewGen: store.viewGen + 1 });
  return store.viewGen;
}

/** Is async work started for view generation `gen` still wanted? */
export function isCurrentView(gen) {
  return gen === store.viewGen;
}

// -- runs ---------------------------------------------------------------------------------------

export function startFollowing(runId, controller) {
  const follow = Object.freeze({ runId, threadId: store.threadId, controller });
  update({ follow });
  return follow;
}

/** Stop following `follow` (any followed run when omitted); a newer follow is left alone. */
export function stopFollowing(follow = store.follow) {
  if (!follow || store.follow !== follow) return false;
  update({ follow: null });
  return true;
}

export function setAwaiting(runId) {
  update({ awaiting: runId || null });
}

export function clearAwaiting(runId) {
  if (store.awaiting === runId) update({ awaiting: null });
}

// -- the Memory panel's file ---------------------------------------------------------------------

export function updateMemory(patch) {
  update({ memory: Object.freeze({ ...store.memory, ...patch }) });
}

export function setMemoryView(view) {
  update({ memoryView: view ? Object.freeze(view) : null });
}

export function setMemoryMode(mode) {
  update({ memoryMode: mode });
}
