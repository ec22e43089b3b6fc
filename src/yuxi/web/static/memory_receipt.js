// Write receipts in the chat: after a `remember_memory` call, a compact card says what was
// saved (or corrected, or found already there), with Undo of exactly that version and View in
// memory. Built from a live `tool_end` event and, alike, from a thread's stored tool calls.

import { api, ApiError, describe } from './api.js';
import { $, el, parseJson } from './dom.js';
import { memoryChangedOnServer, showMemoryEntry } from './memory_panel.js';
import { MEMORY_API, undoVersion } from './memory_store.js';
import { toolArgsOf } from './transcript.js';

// What a successful `remember_memory` reports (`MemoryWriteResult.status` in the memory
// service): it wrote, or the text was already there.
const MEMORY_WRITE_UPDATED = 'updated';
const MEMORY_WRITE_UNCHANGED = 'unchanged';
const QUOTE_MAX = 160;

function quote(text) {
  const flat = String(text ?? '').trim().replace(/\s+/g, ' ');
  return `«${flat.length > QUOTE_MAX ? `${flat.slice(0, QUOTE_MAX - 1)}…` : flat}»`;
}

/** What the receipt says, from the call's arguments and its result. */
function receiptText(args, result, undone) {
  const content = args.content ?? '';
  const replaces = args.replaces ?? '';
  if (result.status === MEMORY_WRITE_UNCHANGED) return `Already in memory: ${quote(content)}`;
  if (undone) {
    return replaces
      ? `Correction undone: memory says ${quote(replaces)} again.`
      : `Undone: ${quote(content)} is no longer in memory.`;
  }
  if (replaces) return `Corrected: ${quote(replaces)} → ${quote(content)}`;
  return content ? `Saved to memory: ${quote(content)}` : 'Saved to memory.';
}

function setState(receipt, stateName, text, note = '') {
  receipt.dataset.state = stateName;
  receipt.querySelector('[data-testid="memory-receipt-text"]').textContent = text;
  const line = receipt.querySelector('[data-testid="memory-receipt-note"]');
  line.textContent = note;
  line.hidden = !note;
}

function markUndone(receipt, args, result) {
  receipt.querySelector('[data-testid="memory-receipt-undo"]')?.remove();
  setState(receipt, 'undone', receiptText(args, result, true));
}

async function onUndo(receipt, button, args, result) {
  button.disabled = true;
  try {
    await undoVersion(result.version_id);
  } catch (err) {
    if (err instanceof ApiError && err.status === 409) {
      button.remove();
      setState(receipt, 'conflict', receiptText(args, result, false),
        'Not undone: your memory changed since this was saved. Look at it in the memory panel to fix it by hand.');
    } else {
      button.disabled = false;
      setState(receipt, receipt.dataset.state, receiptText(args, result, false), `Not undone: ${describe(err)}`);
    }
    return;
  }
  markUndone(receipt, args, result);
  memoryChangedOnServer();
}

/**
 * Add (or redraw) the receipt of a finished `remember_memory` call right after its tool card.
 * `end` is {status, result} as the server reports it. Returns the receipt, or null when the call
 * wrote nothing to report (an error, a result that does not parse).
 */
export function addReceipt(card, end) {
  if (!card || card.dataset.toolName !== 'remember_memory' || end.status !== 'success') return null;
  const result = parseJson(end.result);
  if (!result || (result.status !== MEMORY_WRITE_UPDATED && result.status !== MEMORY_WRITE_UNCHANGED)) {
    return null;
  }
  const args = toolArgsOf(card) || {};
  const callId = card.dataset.toolCallId || '';
  const old = card.nextElementSibling;
  if (old?.dataset.testid === 'memory-receipt' && old.dataset.toolCallId === callId) old.remove();
  const versionId = result.status === MEMORY_WRITE_UPDATED && typeof result.version_id === 'string'
    ? result.version_id : null;
  const view = el('button', { type: 'button', class: 'link small', 'data-testid': 'memory-receipt-view' },
    'View in memory');
  const undo = versionId
    ? el('button', { type: 'button', class: 'small', 'data-testid': 'memory-receipt-undo' }, 'Undo')
    : null;
  const receipt = el('div', {
    class: 'memory-receipt',
    'data-testid': 'memory-receipt',
    'data-tool-call-id': callId,
    'data-run-id': card.dataset.runId,
    'data-version-id': versionId || '',
    role: 'status',
  },
  el('span', { class: 'receipt-icon', 'aria-hidden': 'true' }, result.status === MEMORY_WRITE_UNCHANGED ? '✓' : '✎'),
  el('div', { class: 'receipt-body' },
    el('div', { class: 'receipt-text', 'data-testid': 'memory-receipt-text' }),
    el('div', { class: 'receipt-actions' }, undo, view),
    el('p', { class: 'receipt-note small', 'data-testid': 'memory-receipt-note', hidden: true })));
  setState(receipt, result.status === MEMORY_WRITE_UNCHANGED ? 'unchanged' : 'saved',
    receiptText(args, result, false));
  view.addEventListener('click', () => showMemoryEntry({ versionId, text: args.content || '' }));
  undo?.addEventListener('click', () => onUndo(receipt, undo, args, result));
  receipt.receiptOf = { args, result };
  card.after(receipt);
  return receipt;
}

/** A replayed thread: receipts whose version was undone since say so (one request, if any). */
export async function markUndoneReceipts() {
  const receipts = [...$('transcript').querySelectorAll(
    '[data-testid="memory-receipt"][data-state="saved"]')].filter((r) => r.dataset.versionId);
  if (!receipts.length) return;
  let versions;
  try {
    ({ versions = [] } = await api('GET', `${MEMORY_API}/versions`));
  } catch {
    return; // the receipts still offer Undo; the server refuses what cannot be undone
  }
  const undone = new Set(versions.filter((v) => v.kind === 'undo' && v.target_version_id)
    .map((v) => v.target_version_id));
  for (const receipt of receipts) {
    if (receipt.isConnected && undone.has(receipt.dataset.versionId)) {
      markUndone(receipt, receipt.receiptOf.args, receipt.receiptOf.result);
    }
  }
}
