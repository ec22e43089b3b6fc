// Catching up with the server when the page is looked at again. Another tab or session may have
// switched memory off, archived, deleted or renamed a thread, or decided an approval this page
// still shows as waiting; the server is the truth, so the page reads it again.
//
// When: the page becoming visible again (`visibilitychange`) and the window getting the focus
// (`focus`), coalesced into one refresh. Why not a push channel: a per-user event stream would
// hold a connection per open tab all day, need its own authentication and replay rules, and a
// missed event would still leave a tab stale; a tab nobody looks at needs no truth. Reading
// again when the user comes back costs three small GETs (the switch, the thread list, and the
// open thread only when it changed; the trash too while it is shown) and cannot miss anything,
// whatever happened meanwhile. A run the page follows streams its own events already (sse.js).

import { api, ApiError, threadPath } from './api.js';
import { showNotice } from './banner.js';
import { memoryChangedOnServer } from './memory_panel.js';
import { setEnableMemory, setShowArchived, state } from './state.js';
import { loadThreads, reloadThread, showEmptyThread } from './threads.js';
import { loadTrash } from './trash.js';

/** A refresh this soon after the last one is the same return (focus and visibility both fire). */
const COALESCE_MS = 1500;

let running = null;
let lastAt = 0;
let seen = { threadId: null, updatedAt: null }; // the open thread as the last refresh saw it

/** What to say, and where to go, when the open thread is no longer what this page shows. */
async function followOpenThread() {
  const id = state.threadId;
  if (!id) return;
  const listed = state.threads.find((t) => t.thread_id === id);
  if (listed) {
    // Changed since we last looked (a message or a decision in another tab): show it, unless a
    // run is being followed here (its events are arriving anyway).
    const changed = seen.threadId === id && seen.updatedAt !== null
      && seen.updatedAt !== listed.updated_at;
    const waiting = state.awaiting !== null; // an approval card that may have been answered
    seen = { threadId: id, updatedAt: listed.updated_at };
    if ((changed || waiting) && !state.follow) reloadThread();
    return;
  }
  let thread;
  try {
    thread = await api('GET', threadPath(id));
  } catch (err) {
    if (err instanceof ApiError && err.status === 404 && state.threadId === id) {
      showEmptyThread();
      showNotice('That thread was deleted in another tab or session.', { owner: 'sync' });
    }
    return;
  }
  if (state.threadId !== id) return;
  if (thread.status === 'archived' && !state.showArchived) {
    showEmptyThread();
    showNotice('That thread was archived in another tab or session; it is under Archived threads.',
      { owner: 'sync' });
  } else if (thread.status === 'active' && state.showArchived) {
    // restored elsewhere: back to the ordinary list, the thread stays open
    setShowArchived(false);
    await loadThreads();
  }
}

async function refresh() {
  if (!state.token || !state.me) return;
  try {
    const config = await api('GET', '/me/config');
    if (config.enable_memory !== state.enableMemory) setEnableMemory(config.enable_memory);
  } catch {
    return; // the server is not answering now; the next return tries again
  }
  await loadThreads();
  if (state.showTrash) await loadTrash(); // deleted, restored or purged elsewhere
  await followOpenThread();
  await memoryChangedOnServer(); // an open panel shows the file as it is now (drafts kept)
}

/** The page is looked at again: refresh once (a refresh under way, or just done, is enough). */
export function refreshOnReturn() {
  if (document.visibilityState === 'hidden') return running;
  if (running || Date.now() - lastAt < COALESCE_MS) return running;
  running = refresh().finally(() => {
    running = null;
    lastAt = Date.now();
  });
  return running;
}

/** A thread was opened (app.js subscribes this to `threadId`): what it is like now. */
export function noteOpenThread() {
  const listed = state.threads.find((t) => t.thread_id === state.threadId);
  seen = { threadId: state.threadId, updatedAt: listed?.updated_at ?? null };
}
