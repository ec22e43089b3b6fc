// The thread delete dialog: it shows the lines of memory the thread wrote (GET
// /threads/{id}/memory: entries whose source is one of its runs) and lets the user choose to forget
// them with the thread (DELETE ?forget_memory=true, one undoable "forget" version) or keep them.
// Without that choice memory is left as it is. Text only ever reaches the page as text nodes.

import { api, describe, threadPath } from './api.js';
import { confirmDialog } from './dialog.js';
import { el } from './dom.js';

/** What the thread wrote to memory, or an error to show instead of it. */
async function writtenLines(threadId) {
  try {
    const body = await api('GET', threadPath(threadId, '/memory'));
    return { lines: (body.entries || []).map((e) => e.text) };
  } catch (err) {
    return { lines: [], error: describe(err) };
  }
}

function memorySection({ lines, error }, checkbox) {
  if (error) {
    return el('p', {
      class: 'forget-note', 'data-testid': 'forget-note',
      text: `Could not load what this thread wrote to memory (${error}); deleting it leaves memory as it is.`,
    });
  }
  if (!lines.length) {
    return el('p', {
      class: 'forget-note', 'data-testid': 'forget-note',
      text: 'Nothing this thread wrote is in your memory now; memory stays as it is.',
    });
  }
  const one = lines.length === 1;
  const wrote = one ? 'This thread wrote 1 line that is in your memory now:'
    : `This thread wrote ${lines.length} lines that are in your memory now:`;
  return el('div', { class: 'forget-memory' },
    el('p', { class: 'forget-note', 'data-testid': 'forget-note', text: wrote }),
    el('ul', { class: 'forget-lines', 'data-testid': 'forget-lines' },
      ...lines.map((line) => el('li', { 'data-testid': 'forget-line', text: line }))),
    el('label', { class: 'forget-choice' },
      checkbox,
      ` Also forget ${one ? 'this line' : 'these lines'} (you can undo this, or restore `
        + `${one ? 'it' : 'them'} later from Versions in the memory panel)`));
}

/**
 * Ask whether to delete the thread, showing what it wrote to memory. Resolves null when the
 * user keeps the thread, else {forget}: whether its lines go with it.
 */
export async function askDeleteThread(threadId, title) {
  const written = await writtenLines(threadId);
  const checkbox = el('input', { type: 'checkbox', 'data-testid': 'forget-memory' });
  const ok = await confirmDialog({
    title: `Delete “${title}”?`,
    // a soft delete: the thread's status becomes deleted; its rows go only with the account
    message: 'It leaves your thread list and the assistant can no longer find or read it; you '
      + 'cannot open it again. Its messages are kept: they stay in your account export until '
      + 'you delete your account.',
    confirm: 'Delete thread',
    danger: true,
    extra: memorySection(written, checkbox),
  });
  if (!ok) return null;
  return { forget: written.lines.length > 0 && checkbox.checked };
}

/** Delete the thread, with its memory lines when asked; the forget's answer (or null). */
export async function deleteThread(threadId, { forget }) {
  return api('DELETE', threadPath(threadId, forget ? '?forget_memory=true' : ''));
}
