// The open thread's settings in the chat header: rename it inline, and hide it from recall (the
// history tools then never see it). Both go through PATCH /threads/{id}.

import { api, describe, threadPath } from './api.js';
import { showError } from './banner.js';
import { $ } from './dom.js';
import { replaceThread, state } from './state.js';

function currentThread() {
  return state.threads.find((t) => t.thread_id === state.threadId) || null;
}

async function patchThread(threadId, patch) {
  const thread = await api('PATCH', threadPath(threadId), { json: patch });
  if (thread?.thread_id) replaceThread(thread);
  return thread;
}

/** The header's controls for the open thread (called whenever the threads or the open one change). */
export function renderThreadSettings() {
  const thread = currentThread();
  $('rename-thread').hidden = !thread || !$('thread-title-form').hidden;
  $('recall-setting').hidden = !thread;
  const toggle = $('recall-toggle');
  if (toggle.dataset.saving !== 'true') toggle.checked = Boolean(thread?.recall_excluded);
  $('recall-setting').dataset.hidden = thread?.recall_excluded ? 'true' : 'false';
  if (renaming && renaming !== thread?.thread_id) cancelRename(); // another thread opened
}

// -- rename ------------------------------------------------------------------------------------------

let renaming = null; // the thread id being renamed
let saving = false; // a rename is on its way (Enter and the blur that follows send it once)

export function startRename() {
  const thread = currentThread();
  if (!thread) return;
  renaming = thread.thread_id;
  const input = $('thread-title-input');
  input.value = thread.title || '';
  $('thread-title').hidden = true;
  $('thread-title-form').hidden = false;
  $('rename-thread').hidden = true;
  input.focus();
  input.select();
}

export function cancelRename() {
  renaming = null;
  $('thread-title-form').hidden = true;
  $('thread-title').hidden = false;
  $('rename-thread').hidden = !currentThread();
}

export async function commitRename(event) {
  event?.preventDefault();
  const threadId = renaming;
  if (!threadId || saving) return;
  const title = $('thread-title-input').value.trim();
  const old = state.threads.find((t) => t.thread_id === threadId);
  if (!title || title === old?.title) {
    cancelRename();
    return;
  }
  saving = true;
  $('thread-title-input').readOnly = true;
  try {
    await patchThread(threadId, { title });
    if (renaming === threadId) cancelRename();
  } catch (err) {
    showError(`Could not rename the thread: ${describe(err)}`);
  } finally {
    saving = false;
    $('thread-title-input').readOnly = false;
  }
}

export function onRenameKey(event) {
  if (event.key === 'Escape') {
    event.preventDefault();
    event.stopPropagation();
    cancelRename();
  }
}

// -- recall -------------------------------------------------------------------------------------------

export async function onRecallToggle() {
  const toggle = $('recall-toggle');
  const thread = currentThread();
  if (!thread) return;
  const wanted = toggle.checked;
  toggle.disabled = true;
  toggle.dataset.saving = 'true';
  try {
    await patchThread(thread.thread_id, { recall_excluded: wanted });
  } catch (err) {
    showError(`Could not change whether the assistant may recall this thread: ${describe(err)}`);
  } finally {
    toggle.disabled = false;
    delete toggle.dataset.saving;
    renderThreadSettings();
  }
}
