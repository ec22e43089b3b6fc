// The transcript: message bubbles, tool cards, run errors, and a thread's stored history.
// Rendering only: no fetching, no state changes.

import { $, el, parseJson, pretty, prettyText } from './dom.js';
import { HISTORY_TOOLS, historyAnswer, historyCallText } from './history_cards.js';
import { markdownFragment } from './markdown.js';
import { TOOL_STATUS_TEXT } from './vocabulary.js';

export function isNearBottom() {
  const t = $('transcript');
  return t.scrollHeight - t.scrollTop - t.clientHeight < 80;
}

export function scrollToBottom(force = false) {
  const t = $('transcript');
  if (force || isNearBottom()) t.scrollTop = t.scrollHeight;
}

export function appendToTranscript(node) {
  const stick = isNearBottom();
  const t = $('transcript');
  t.querySelector('[data-testid="empty-transcript"]')?.remove();
  t.append(node);
  if (stick) scrollToBottom(true);
  return node;
}

export function showPlaceholder(...paragraphs) {
  $('transcript').replaceChildren(el('div', { class: 'empty', 'data-testid': 'empty-transcript' },
    ...paragraphs));
}

export function messageBubble(role, text, { runId, messageId, note = false, streaming = false } = {}) {
  const bodyId = role === 'assistant' && !note ? 'assistant-reply' : 'message-text';
  const body = el('div', { class: 'bubble-text', 'data-testid': bodyId });
  setBubbleText(body, role, text);
  return el('div', {
    class: `message ${role}${note ? ' note' : ''}`,
    'data-testid': 'message',
    'data-role': role,
    'data-run-id': runId,
    'data-message-id': messageId ?? null,
    'data-streaming': streaming ? 'true' : null,
  },
  el('div', { class: 'bubble-role' }, role === 'user' ? 'You' : 'Yuxi'),
  body);
}

/**
 * Put `text` in a bubble's body: an assistant's words as sanitised Markdown (markdown.js), a
 * user's as plain text (never parsed).
 */
export function setBubbleText(body, role, text) {
  if (role === 'assistant') {
    body.classList.add('markdown');
    body.replaceChildren(markdownFragment(text));
  } else {
    body.textContent = text;
  }
}

const toolArgs = new WeakMap(); // tool card → the arguments it was called with

/** The arguments a tool card's call was made with (undefined when its start was not seen). */
export function toolArgsOf(card) {
  return toolArgs.get(card);
}

/** A tool card, running until `finishToolCard` (or `setToolStatus`) says otherwise. */
export function toolCard(start, runId, { withArgs = true } = {}) {
  const name = String(start.name || 'tool');
  const history = HISTORY_TOOLS.has(name);
  const args = start.args && typeof start.args === 'object' ? start.args : null;
  const argsBlock = withArgs
    ? [el('div', { class: 'tool-section-label' }, 'Arguments'),
      el('pre', { class: 'tool-args', 'data-testid': 'tool-args' }, pretty(start.args ?? {}))]
    : [];
  const card = el('div', {
    class: `tool-event${history ? ' history-tool' : ''}`,
    'data-testid': 'tool-event',
    'data-tool-name': name,
    'data-tool-call-id': start.tool_call_id || '',
    'data-status': 'running',
    'data-run-id': runId,
  },
  el('div', { class: 'tool-head' },
    el('span', { class: 'tool-icon', 'aria-hidden': 'true' }, history ? '↺' : '⚙'),
    el('span', { class: 'tool-label' }, history ? 'History' : 'Tool'),
    el('code', { class: 'tool-name', 'data-testid': 'tool-name' }, name),
    el('span', { class: 'spacer' }),
    el('span', { class: 'tool-status', 'data-testid': 'tool-status' }, TOOL_STATUS_TEXT.running)),
  // a history call reads as words; what the model sent and got stays one click away
  history && args ? el('p', { class: 'tool-summary', 'data-testid': 'tool-summary' }, historyCallText(name, args)) : null,
  ...(history ? [el('details', { class: 'tool-result', 'data-testid': 'tool-details' },
    el('summary', {}, 'Details: what the model sent and got'), ...argsBlock)] : argsBlock));
  if (args) toolArgs.set(card, args);
  return card;
}

export function setToolStatus(card, status) {
  card.dataset.status = status;
  card.querySelector('[data-testid="tool-status"]').textContent = TOOL_STATUS_TEXT[status] || status;
}

/** The newest card of a tool call in the open transcript (the call may be an earlier run's). */
function findToolCard(toolCallId) {
  if (!toolCallId) return null;
  const cards = $('transcript').querySelectorAll(
    `[data-testid="tool-event"][data-tool-call-id="${CSS.escape(toolCallId)}"]`);
  return cards.length ? cards[cards.length - 1] : null;
}

/** The error text of a failed tool: a JSON error's message when there is one (display only). */
function errorText(result) {
  const parsed = parseJson(result);
  const message = parsed && typeof parsed === 'object'
    ? parsed.error || parsed.message || parsed.code
    : result;
  return String(message || 'The tool reported an error.');
}

/**
 * What a person reads on the card of a call they rejected. The result the model got (e.g.
 * "Do not save it again…", which is addressed to the model) stays in the card's Result.
 */
const REJECTED_TEXT = {
  remember_memory: 'You rejected this, so nothing was saved to your memory.',
  write_workspace_file: 'You rejected this, so the file was not written.',
  edit_workspace_file: 'You rejected this, so the file was not changed.',
};

/**
 * Was the call on `card` (one of the calls an approval holds) rejected by the user? A memory
 * write's result says so by its code; a file write's run's decision does (a rejected card in the
 * transcript, or `rejected` from the thread view's decisions).
 */
function wasRejected(card, end, rejected) {
  if (end.status !== 'error' || !(card.dataset.toolName in REJECTED_TEXT)) return false;
  if (parseJson(end.result)?.code === 'memory_write_rejected') return true;
  if (card.dataset.toolName === 'remember_memory') return false; // failed for another reason
  if (rejected) return true;
  const decided = [...$('transcript').querySelectorAll('[data-testid="approval-card"][data-state="rejected"]')];
  return decided.some((c) => c.dataset.runId === card.dataset.runId);
}

/**
 * Show a tool call's outcome on `card`. `end` is {status, result, truncated} as the server
 * reports it (a `tool_end` event or a thread view's tool call): the status is taken as given.
 * `rejected`: the user rejected this call (known from the thread's decisions).
 */
export function showToolResult(card, end, { rejected = false } = {}) {
  const status = end.status === 'error' ? 'error' : 'success';
  setToolStatus(card, status);
  for (const old of card.querySelectorAll(
    '[data-testid="tool-error"], [data-testid="tool-result"], [data-testid="history-answer"], [data-testid="history-unreadable"]')) {
    old.remove();
  }
  if (wasRejected(card, end, rejected)) {
    card.dataset.rejected = 'true';
    card.querySelector('[data-testid="tool-status"]').textContent = 'rejected';
    card.append(el('p', { class: 'tool-rejected', 'data-testid': 'tool-error' },
      REJECTED_TEXT[card.dataset.toolName]));
  } else if (status === 'error') {
    card.append(el('p', { class: 'tool-error', 'data-testid': 'tool-error' }, errorText(end.result)));
  }
  const label = ['Result', end.truncated ? ' (truncated)' : ''];
  const text = el('pre', { 'data-testid': 'tool-result-text' }, prettyText(end.result ?? ''));
  const details = card.querySelector('[data-testid="tool-details"]');
  if (!details) {
    card.append(el('details', { class: 'tool-result', 'data-testid': 'tool-result' },
      el('summary', {}, ...label), text));
    return card;
  }
  details.append(el('div', { 'data-testid': 'tool-result' },
    el('div', { class: 'tool-section-label' }, ...label), text));
  if (status === 'success') {
    const answer = historyAnswer(card.dataset.toolName, toolArgs.get(card), end.result);
    details.before(answer || el('p', { class: 'history-note muted small', 'data-testid': 'history-unreadable' },
      end.truncated
        ? 'This answer is too long to show here: its start is under Details.'
        : 'This answer has no list to show: it is under Details.'));
  }
  return card;
}

/** Show a stored message of the open thread (a memory entry's source): scroll to it, mark it. */
export function highlightMessage(messageId) {
  const transcript = $('transcript');
  for (const node of transcript.querySelectorAll('[data-highlighted]')) delete node.dataset.highlighted;
  if (messageId === null || messageId === undefined) return false;
  const found = transcript.querySelector(`[data-testid="message"][data-message-id="${CSS.escape(String(messageId))}"]`);
  if (!found) return false;
  found.dataset.highlighted = 'true';
  found.scrollIntoView({ block: 'center' });
  return true;
}

/** A live `tool_end`: complete the card started earlier (possibly by another run). */
export function finishToolCard(end, runId) {
  let card = findToolCard(end.tool_call_id);
  if (!card) {
    card = appendToTranscript(toolCard({ tool_call_id: end.tool_call_id, name: end.name }, runId,
      { withArgs: false }));
  }
  return showToolResult(card, end);
}

/** Tool cards of an interrupted run that did not run yet wait for the user's decision. */
export function markPending(runId) {
  for (const card of $('transcript').querySelectorAll('[data-testid="tool-event"]')) {
    if (card.dataset.runId === runId && card.dataset.status === 'running') {
      setToolStatus(card, 'pending');
    }
  }
}

export function runError(error) {
  const text = error?.message || error?.code || 'The run failed.';
  return el('div', { class: 'run-error', 'data-testid': 'run-error', role: 'alert' },
    el('strong', {}, 'Run failed: '), String(text));
}

/**
 * Render a thread's stored messages, tool cards included (each tool-calling message carries its
 * tool calls with their status and result). Messages of the `live` run are left out: that run is
 * followed over SSE. Tool results are not bubbles of their own: they show in their tool card.
 * A call still pending stays `running` when its run is in `open` (the interrupted run, whose
 * cards `markPending` marks next, or the one a live run resumes) and is `unfinished` otherwise.
 * `finished(card, call)` is told of each call shown with its outcome (write receipts use it);
 * `rejected` holds the runs whose interruption the user rejected (their failed calls say so).
 */
export function renderHistory(messages, {
  live = null, open = new Set(), rejected = new Set(), finished = () => {},
} = {}) {
  const transcript = $('transcript');
  transcript.replaceChildren();
  for (const m of messages) {
    if (live && m.run_id === live && m.role !== 'user') continue; // re-rendered live
    if (m.message_type === 'text' && (m.role === 'user' || m.role === 'assistant')) {
      transcript.append(messageBubble(m.role, m.content, { runId: m.run_id, messageId: m.message_id }));
    } else if (m.message_type === 'tool_call') {
      if (m.content && m.content.trim()) {
        transcript.append(messageBubble('assistant', m.content, { runId: m.run_id, note: true }));
      }
      for (const call of m.tool_calls || []) {
        const card = transcript.appendChild(toolCard(call, m.run_id));
        if (call.status === 'success' || call.status === 'error') {
          showToolResult(card, call, { rejected: rejected.has(m.run_id) });
          finished(card, call);
        } else if (!open.has(m.run_id)) setToolStatus(card, 'unfinished');
      }
    }
  }
  if (!messages.length) {
    showPlaceholder(el('p', { class: 'muted' }, 'No messages yet. Say something below.'));
  }
}
