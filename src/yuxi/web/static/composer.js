// The message box: sending a message starts a run in the open thread. From the empty draft view
// ("+ New thread", or no thread yet) the first message sent creates the thread, then the run.

import { api, ApiError, describe, threadPath } from './api.js';
import { clearError, showError } from './banner.js';
import { $, newRequestId } from './dom.js';
import { followRun } from './run.js';
import { state } from './state.js';
import {
  createThread, discardNewThread, loadThreads, reloadThread, selectThread,
} from './threads.js';
import { appendToTranscript, messageBubble, scrollToBottom } from './transcript.js';

/**
 * The longest message the server takes, in UTF-8 bytes (not characters): the server's one
 * definition is `RUN_INPUT_MAX_BYTES` in src/yuxi/limits.py, checked by `check_text` when a run
 * is submitted. No endpoint serves it, so it is repeated here; tests/browser/test_chat_flow_ui.py
 * imports the server's value and checks that both refuse at the same byte.
 */
export const MESSAGE_MAX_BYTES = 32 * 1024;

const utf8 = new TextEncoder();

function formatCount(n) {
  return n.toLocaleString('en-US');
}

/** Why a message is too long to send, in plain words, or '' when it fits. */
function tooLong(text) {
  // one UTF-16 code unit is at most 3 UTF-8 bytes: a text this short always fits
  if (text.length * 3 <= MESSAGE_MAX_BYTES) return '';
  const size = utf8.encode(text).length;
  if (size <= MESSAGE_MAX_BYTES) return '';
  return `Not sent: this message is ${formatCount(size)} bytes; the limit is `
    + `${formatCount(MESSAGE_MAX_BYTES)} bytes (a letter, digit or space is 1 byte, a Chinese, `
    + 'Japanese or Korean character 3, an emoji 4). Shorten it: your text is still in the box.';
}

/** Is the open thread archived? It takes no messages until it is restored. */
function openThreadArchived() {
  if (!state.threadId) return false;
  return state.threads.find((t) => t.thread_id === state.threadId)?.status === 'archived';
}

/**
 * Enabled unless signed out, a run of this thread is under way, or an approval is awaited; the
 * box itself is disabled too while the open thread is archived (saying why in its placeholder).
 */
export function updateComposer() {
  const busy = Boolean(state.follow && state.follow.threadId === state.threadId);
  const waiting = Boolean(state.awaiting);
  const archived = openThreadArchived();
  const input = $('message-input');
  $('send').disabled = !state.token || busy || waiting || archived;
  $('send').title = archived ? 'Restore the thread to send messages in it' : '';
  input.disabled = archived;
  input.placeholder = archived
    ? 'This thread is archived: restore it to send messages.'
    : waiting
      ? 'Approve or reject the pending action first.'
      : 'Message Yuxi… (Enter to send, Shift+Enter for a new line)';
  if (archived) input.setAttribute('aria-describedby', 'thread-archived-note');
  else input.removeAttribute('aria-describedby');
  $('composer').dataset.state = archived
    ? 'archived' : waiting ? 'awaiting-approval' : busy ? 'busy' : 'idle';
}

/** A short line under the message box (empty hides it). */
export function showComposerHint(text) {
  $('composer-hint').textContent = text;
  $('composer-hint').hidden = !text;
}

export async function onSend(event) {
  event.preventDefault();
  const input = $('message-input');
  const text = input.value;
  if ($('send').disabled || input.disabled) return;
  if (!text.trim()) {
    // refused visibly: nothing is sent, and the box says why
    showComposerHint(text ? 'Not sent: the message is only blank space.' : 'Type a message first.');
    input.focus();
    return;
  }
  const refusal = tooLong(text);
  if (refusal) {
    // refused before anything is created or sent; the text stays in the box to be shortened
    showComposerHint(refusal);
    input.focus();
    return;
  }
  showComposerHint('');
  $('send').disabled = true;
  clearError();
  let threadId = state.threadId;
  let created = false; // this send created the thread: a failure deletes it again
  try {
    if (!threadId) {
      const thread = await createThread();
      created = true;
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
    run = await api('POST', threadPath(threadId, '/runs'), {
      json: { input: text, request_id: newRequestId() },
    });
  } catch (err) {
    bubble.remove();
    if (!input.value) input.value = text;
    const expired = err instanceof ApiError && err.status === 401;
    if (!expired) showError(`Not sent: ${describe(err)}`);
    // a thread made for this message alone is not left behind empty: back to the draft
    if (created && !expired) await discardNewThread(threadId);
    else if (err instanceof ApiError && err.status === 409 && state.threadId === threadId) {
      reloadThread();
    }
    updateComposer();
    return;
  }
  if (state.threadId !== threadId) return;
  delete bubble.dataset.pending;
  bubble.dataset.runId = run.run_id;
  followRun(run.run_id);
  loadThreads();
}
