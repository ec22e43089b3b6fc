// The message box: sending a message starts a run in the open thread (created when needed).

import { api, ApiError, describe, threadPath } from './api.js';
import { clearError, showError } from './banner.js';
import { $, newRequestId } from './dom.js';
import { followRun } from './run.js';
import { state } from './state.js';
import { createThread, loadThreads, reloadThread, selectThread } from './threads.js';
import { appendToTranscript, messageBubble, scrollToBottom } from './transcript.js';

/** Enabled unless signed out, a run of this thread is under way, or an approval is awaited. */
export function updateComposer() {
  const busy = Boolean(state.follow && state.follow.threadId === state.threadId);
  const waiting = Boolean(state.awaiting);
  $('send').disabled = !state.token || busy || waiting;
  $('message-input').placeholder = waiting
    ? 'Approve or reject the pending action first.'
    : 'Message Yuxi… (Enter to send, Shift+Enter for a new line)';
  $('composer').dataset.state = waiting ? 'awaiting-approval' : busy ? 'busy' : 'idle';
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
  if ($('send').disabled) return;
  if (!text.trim()) {
    // refused visibly: nothing is sent, and the box says why
    showComposerHint(text ? 'Not sent: the message is only blank space.' : 'Type a message first.');
    input.focus();
    return;
  }
  showComposerHint('');
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
    run = await api('POST', threadPath(threadId, '/runs'), {
      json: { input: text, request_id: newRequestId() },
    });
  } catch (err) {
    bubble.remove();
    if (!input.value) input.value = text;
    updateComposer();
    if (err instanceof ApiError && err.status === 409) {
      showError(`Not sent: ${describe(err)}`);
      if (state.threadId === threadId) reloadThread();
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
