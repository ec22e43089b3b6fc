// The thread delete dialog: it says the thread goes to the trash for the server's days (trash.js),
// shows the lines of memory the thread wrote (GET /threads/{id}/memory: entries whose source is one
// of its runs) and lets the user choose to forget them with the thread (DELETE
// ?forget_memory=true, one undoable "forget" version; a restore from the trash does not bring
// them back) or keep them. Without that choice memory is left as it is. Text only ever reaches
// the page as text nodes.

import { api, describe, threadPath } from './api.js';
import { confirmDialog } from './dialog.js';
import { el } from './dom.js';
import { deletionWords, trashDays } from './trash.js';

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
        + `${one ? 'it' : 'them'} later from Versions in the memory panel; restoring the thread `
        + `from the trash does not bring ${one ? 'it' : 'them'} back)`));
}

/**
 * Ask whether to delete the thread, showing what it wrote to memory. Resolves null when the
 * user keeps the thread, else {forget, days}: whether its lines go with it, and how many days
 * it stays in the trash (null: unknown).
 */
export async function askDeleteThread(threadId, title) {
  const [written, days] = await Promise.all([writtenLines(threadId), trashDays()]);
  const checkbox = el('input', { type: 'checkbox', 'data-testid': 'forget-memory' });
  const ok = await confirmDialog({
    title: `Delete “${title}”?`,
    // to the trash: restorable for the server's YUXI_TRASH_DAYS, then purged whole
    message: deletionWords(days),
    confirm: 'Delete thread',
    danger: true,
    extra: memorySection(written, checkbox),
  });
  if (!ok) return null;
  return { forget: written.lines.length > 0 && checkbox.checked, days };
}

/** Delete the thread, with its memory lines when asked; the forget's answer (or null). */
export async function deleteThread(threadId, { forget }) {
  return api('DELETE', threadPath(threadId, forget ? '?forget_memory=true' : ''));
}
