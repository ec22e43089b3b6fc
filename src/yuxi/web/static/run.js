// Following a run live: its events render into the open transcript as they stream.

import { api, describe, runPath } from './api.js';
import { showApproval } from './approvals.js';
import { showError } from './banner.js';
import { $, el } from './dom.js';
import { memoryChangedOnServer } from './memory_panel.js';
import { addReceipt } from './memory_receipt.js';
import { startFollowing, state, stopFollowing as forgetFollow } from './state.js';
import { streamRun } from './sse.js';
import {
  appendToTranscript, finishToolCard, isNearBottom, markPending, messageBubble, runError,
  scrollToBottom, setBubbleText, toolCard,
} from './transcript.js';
import { ACTIVE, RUN_STATUS_TEXT } from './vocabulary.js';

let hooks = { settled: () => {} };

/** What happens when a followed run ends (app.js: refresh the thread list). */
export function wireRuns({ settled }) {
  hooks = { settled };
}

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
    setBubbleText(this.ensureBubble().querySelector('.bubble-text'), 'assistant', text);
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
        addReceipt(finishToolCard(data, this.runId), data);
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

  /** The run ended: one read of it for its usage (dropped if the view moved on meanwhile). */
  async settle(status, signal) {
    if (this.bubble) {
      // streamed text without a final message (failed or cancelled mid-way)
      delete this.bubble.dataset.streaming;
      this.bubble.classList.add('incomplete');
      this.bubble = null;
    }
    if (status !== 'completed' && status !== 'failed' && status !== 'interrupted') return;
    // One read of the settled run: its usage, and the interrupt if the stream did not carry it.
    let run;
    try {
      run = await api('GET', runPath(this.runId));
    } catch (err) {
      if (status === 'interrupted' && !this.sawInterrupt && !signal.aborted) {
        showError(`The run is waiting for approval, but it could not be loaded: ${describe(err)}`);
      }
      return; // usage is a courtesy; the run itself is shown already
    }
    if (signal.aborted) return; // another thread (or the draft) is on screen now
    this.showUsage(run.usage);
    if (status === 'interrupted' && !this.sawInterrupt) {
      markPending(this.runId);
      showApproval(this.runId, run.output?.interrupt);
    }
  }

  /** "N tokens · M model calls" under a settled run (the run view's `usage`). */
  showUsage(usage) {
    if (!usage || !usage.model_calls) return;
    const calls = `${usage.model_calls} model call${usage.model_calls === 1 ? '' : 's'}`;
    const tokens = `${Number(usage.total_tokens).toLocaleString()} tokens`;
    appendToTranscript(el('div', {
      class: 'run-note muted small', 'data-testid': 'run-usage', 'data-run-id': this.runId,
      title: `${usage.input_tokens} in, ${usage.output_tokens} out`,
    }, `${tokens} · ${calls}`));
  }
}

export function setRunStatus(status) {
  const bar = $('run-status');
  if (!status || !ACTIVE.has(status)) {
    bar.hidden = true;
    bar.dataset.status = status || 'idle';
    return;
  }
  bar.hidden = false;
  bar.dataset.status = status;
  $('run-status-text').textContent = RUN_STATUS_TEXT[status] || status;
}

/** Stop following the followed run, if any (its stream is aborted; the run goes on). */
export function stopFollowing() {
  const follow = state.follow;
  if (follow) {
    forgetFollow(follow);
    follow.controller.abort();
  }
  setRunStatus(null);
}

/**
 * Render one event, keeping the view at the end when it was there (the transcript's rule). An
 * event may grow something above the end — a resumed run's `tool_end` completes the earlier
 * run's tool card and adds its write receipt there — which alone would push the end away and
 * leave the rest of the run below the view.
 */
function followingBottom(render) {
  const stick = isNearBottom();
  render();
  if (stick) scrollToBottom(true);
}

/** Follow `runId` live; `onSettled(status)` is told how it ended (not when the view moved on). */
export function followRun(runId, { onSettled = () => {} } = {}) {
  stopFollowing();
  const controller = new AbortController();
  const follow = startFollowing(runId, controller);
  const renderer = new RunRenderer(runId);
  setRunStatus('pending');
  streamRun(runId, (ev) => followingBottom(() => renderer.handle(ev)), controller.signal)
    .then(async (status) => {
      if (controller.signal.aborted || status === null) return;
      const stick = isNearBottom();
      await renderer.settle(status, controller.signal);
      if (controller.signal.aborted) return; // the view moved on while the run was read
      onSettled(status);
      if (stick) scrollToBottom(true);
    })
    .catch((err) => {
      if (controller.signal.aborted) return;
      showError(`Lost track of the run: ${describe(err)}. Reopen the thread to see its result.`);
    })
    .finally(() => {
      if (forgetFollow(follow)) {
        setRunStatus(null);
        hooks.settled();
      }
    });
}

export async function onCancelRun() {
  const runId = state.follow?.runId;
  if (!runId) return;
  try {
    await api('POST', runPath(runId, '/cancel'));
    $('run-status-text').textContent = 'Stopping…';
  } catch (err) {
    showError(`Could not stop the run: ${describe(err)}`);
  }
}
