// The thread list's actions (the new-thread draft, archive / restore / delete, the Archived view)
// and opening a thread: its history from the thread view (tool calls and memory write receipts
// included), then its live run, if any, over SSE.

import { api, ApiError, describe, runPath, threadPath } from './api.js';
import { decidedCard, settleDecidedCard, showApproval } from './approvals.js';
import { showError, showNotice } from './banner.js';
import { $, el } from './dom.js';
import { closeDrawer } from './drawer.js';
import { closeMemoryPanel, memoryChangedOnServer } from './memory_panel.js';
import { setMemoryStatus } from './memory_store.js';
import { addReceipt, markUndoneReceipts } from './memory_receipt.js';
import { followRun, stopFollowing } from './run.js';
import { showStartHint } from './start_hint.js';
import { askDeleteThread, deleteThread } from './thread_delete.js';
import { noteTrashed } from './trash.js';
import {
  addThread, isCurrentView, openThread, removeThread, setShowArchived, setThreads, state,
} from './state.js';
import {
  highlightMessage, markPending, renderHistory, runError, scrollToBottom,
} from './transcript.js';
import { ACTIVE } from './vocabulary.js';

/** Load the sidebar's list: the ordinary threads, or the archived ones in the Archived view. */
export async function loadThreads() {
  const archived = state.showArchived;
  try {
    const body = await api('GET', archived ? '/threads?include_archived=true' : '/threads');
    if (state.showArchived !== archived) return; // the view changed meanwhile; its own load wins
    const threads = body.threads || [];
    setThreads(archived ? threads.filter((t) => t.status === 'archived') : threads);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return;
    showError(`Could not load your threads: ${describe(err)}`);
  }
}

/** The empty draft view: no thread open; the first message sent creates one (composer.js). */
export function showEmptyThread() {
  stopFollowing();
  openThread(null);
  history.replaceState(null, '', location.pathname + location.search);
  showStartHint();
}

export async function createThread() {
  const thread = await api('POST', '/threads', { json: {} });
  addThread(thread);
  return thread;
}

/**
 * "+ New thread" opens the empty draft: nothing is created on the server until the first
 * message is sent, so clicking it again (or leaving the draft unused) leaves no empty threads.
 * Already on the draft, it only puts the cursor in the message box.
 */
export function onNewThread() {
  if (state.threadId) showEmptyThread();
  closeDrawer();
  $('message-input').focus();
}

/**
 * The thread created for a first message that could not be sent: delete it if it is still
 * empty, and go back to the draft (the message stays in the box). If it cannot be checked or
 * deleted it stays, listed like any thread.
 */
export async function discardNewThread(threadId) {
  try {
    const detail = await api('GET', threadPath(threadId));
    if ((detail.messages || []).length) return false;
    await api('DELETE', threadPath(threadId));
    // it never held anything: nothing to keep in the trash either
    await api('DELETE', `/trash/${encodeURIComponent(threadId)}`).catch(() => {});
  } catch {
    return false;
  }
  removeThread(threadId);
  if (state.threadId === threadId) showEmptyThread();
  return true;
}

/** Open `threadId` at one of its messages (a memory entry's source link). */
export async function openSource(threadId, messageId) {
  if (matchMedia('(max-width: 860px)').matches && !(await closeMemoryPanel())) return;
  if (threadId !== state.threadId) {
    if (!(await selectThread(threadId))) return;
  }
  highlightMessage(messageId);
}

/**
 * Open a thread from a link (a history tool card, a search hit), at `messageId` when given.
 * Resolves 'opened'; 'gone' when the thread no longer exists (the open view stays, the banner
 * says so and thread_link.js marks the links); 'failed' otherwise.
 */
export async function openLinkedThread(threadId, messageId = null) {
  if (threadId === state.threadId) {
    closeDrawer();
    showLinkedMessage(messageId);
    return 'opened';
  }
  const gen = state.viewGen;
  let detail;
  try {
    detail = await api('GET', threadPath(threadId));
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      removeThread(threadId);
      showError('That thread was deleted: restore it from the trash (while it is there) to open it.');
      return 'gone';
    }
    showError(`Could not open the thread: ${describe(err)}`);
    return 'failed';
  }
  if (!isCurrentView(gen)) return 'failed'; // another thread was opened meanwhile
  // an archived thread opens in the Archived view (its header offers Restore, its box is shut)
  const archived = detail.status === 'archived';
  if (archived !== state.showArchived) {
    setShowArchived(archived);
    await loadThreads();
    if (!isCurrentView(gen)) return 'failed';
  }
  // a thread past the listed ones still gets its header
  if (!state.threads.some((t) => t.thread_id === threadId)) {
    const { messages: _, ...summary } = detail;
    setThreads([...state.threads, summary].sort((a, b) => (a.updated_at < b.updated_at ? 1 : -1)));
  }
  if (!(await selectThread(threadId, detail))) return 'failed';
  showLinkedMessage(messageId);
  return 'opened';
}

/** Scroll to and mark a linked message; say so when it is not among the messages shown. */
export function showLinkedMessage(messageId) {
  if (messageId === null || messageId === undefined) return;
  if (!highlightMessage(messageId)) {
    showNotice('That message is not among the ones shown: the thread view shows its latest 200 messages.');
  }
}

/** Open a thread (its view `loaded` already, or read now); resolves whether its history is
 * now on screen. */
export async function selectThread(threadId, loaded = null) {
  stopFollowing();
  const gen = openThread(threadId);
  history.replaceState(null, '', `#thread=${encodeURIComponent(threadId)}`);
  const transcript = $('transcript');
  transcript.replaceChildren(el('p', { class: 'muted loading' }, 'Loading…'));
  transcript.dataset.ready = 'false';
  let detail;
  try {
    detail = loaded ?? await api('GET', threadPath(threadId));
  } catch (err) {
    if (!isCurrentView(gen)) return false;
    if (err instanceof ApiError && err.status === 404) {
      removeThread(threadId);
      showEmptyThread();
      showError('That thread no longer exists.');
    } else {
      transcript.replaceChildren();
      showError(`Could not load the thread: ${describe(err)}`);
    }
    return false;
  }
  if (!isCurrentView(gen)) return false;
  return showHistory(detail.messages || [], detail.decisions || [], gen);
}

/** Reload the open thread (e.g. after a conflict told us our view is stale). */
export function reloadThread() {
  if (state.threadId) selectThread(state.threadId);
}

/**
 * Render the stored messages, then deal with the thread's last run: follow it live when it is
 * still active, show its approval card when it is interrupted and undecided, its error when it
 * failed. Each stored decision shows as a decided card after the run it answered (the server's
 * record: a reload, or another tab, shows the same).
 */
async function showHistory(messages, decisions, gen) {
  const lastRunId = [...messages].reverse().find((m) => m.run_id)?.run_id || null;
  let lastRun = null;
  if (lastRunId) {
    try {
      lastRun = await api('GET', runPath(lastRunId));
    } catch {
      lastRun = null;
    }
  }
  if (!isCurrentView(gen)) return false;
  const decisionOf = new Map(decisions.map((d) => [d.run_id, d]));
  // Decided, but its resume run has written no message yet: that run is the one to follow.
  const answered = lastRun?.status === 'interrupted' ? decisionOf.get(lastRun.run_id) : null;
  let live = lastRun && ACTIVE.has(lastRun.status) ? lastRun.run_id : null;
  if (answered && ACTIVE.has(answered.status)) live = answered.decided_by_run_id;
  const open = new Set();
  if (lastRun?.status === 'interrupted') open.add(lastRun.run_id);
  if (live && lastRun.created_by_run_id) open.add(lastRun.created_by_run_id);
  const rejected = new Set(decisions.filter((d) => d.decision === 'reject').map((d) => d.run_id));

  const transcript = $('transcript');
  renderHistory(messages, { live, open, rejected, finished: addReceipt });
  let followLive = {};
  for (const d of decisions) {
    const card = placeDecision(d);
    const follow = card && settleDecidedCard(card, d.decided_by_run_id === live ? 'running' : d.status);
    if (follow && d.decided_by_run_id === live) followLive = follow;
  }
  transcript.dataset.ready = 'true';
  if (lastRun?.status === 'interrupted' && !answered) {
    markPending(lastRun.run_id);
    showApproval(lastRun.run_id, lastRun.output?.interrupt);
  } else if (lastRun?.status === 'failed') {
    transcript.append(runError(lastRun.error));
  }
  scrollToBottom(true);
  if (live) followRun(live, followLive);
  markUndoneReceipts();
  return true;
}

/** A stored decision's card, right after what its interrupted run showed (none: not shown). */
function placeDecision(d) {
  const shown = [...$('transcript').children].filter((node) => node.dataset.runId === d.run_id);
  if (!shown.length) return null;
  const card = decidedCard(d);
  shown[shown.length - 1].after(card);
  return card;
}

export async function onArchive() {
  const id = state.threadId;
  if (!id) return;
  try {
    await api('POST', threadPath(id, '/archive'));
    removeThread(id);
    showEmptyThread();
  } catch (err) {
    showError(`Could not archive the thread: ${describe(err)}`);
  }
}

export async function onDelete() {
  const id = state.threadId;
  if (!id) return;
  const title = state.threads.find((t) => t.thread_id === id)?.title || 'this thread';
  const choice = await askDeleteThread(id, title);
  if (!choice || state.threadId !== id) return;
  try {
    const forgotten = await deleteThread(id, choice);
    removeThread(id);
    showEmptyThread();
    noteTrashed(id, title, choice.days, { quiet: Boolean(forgotten?.version) });
    if (forgotten?.version) {
      const n = forgotten.removed.length;
      setMemoryStatus(`Forgot ${n === 1 ? '1 line' : `${n} lines`} with the deleted thread.`, {
        undo: { versionId: forgotten.version.version_id, label: 'Forgetting' },
      });
      await memoryChangedOnServer();
    }
  } catch (err) {
    showError(`Could not delete the thread: ${describe(err)}`);
  }
}

/** Make an archived thread ordinary again; it opens among the ordinary threads. */
export async function onRestore(threadId = state.threadId) {
  if (!threadId) return;
  try {
    await api('POST', threadPath(threadId, '/unarchive'));
  } catch (err) {
    showError(`Could not restore the thread: ${describe(err)}`);
    return;
  }
  setShowArchived(false);
  await loadThreads();
  await selectThread(threadId);
}

/** Switch the sidebar between the ordinary threads and the archived ones. */
export async function onArchivedToggle() {
  setShowArchived(!state.showArchived);
  setThreads([]);
  showEmptyThread();
  await loadThreads();
}
