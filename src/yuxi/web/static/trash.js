// The trash: deleted threads, restorable for the server's YUXI_TRASH_DAYS, then removed for good
// (GET /trash, POST /trash/{id}/restore, DELETE /trash/{id}). The sidebar shows it in place of
// the thread list (the Trash button at its foot); each thread offers Restore and Delete now.
// A restored thread comes back with everything it had, except memory lines its deletion forgot:
// the list and the notice say so. Text only ever reaches the page as text nodes.

import { api, ApiError, describe } from './api.js';
import { showError, showNotice } from './banner.js';
import { confirmDialog } from './dialog.js';
import { $, el, shortText } from './dom.js';
import { setShowArchived, setShowTrash, setTrash, state } from './state.js';
import { timeElement } from './when.js';

const TITLE_CHARS = 80;
/** A notice is one or two lines on a phone: titles in it are cut shorter. */
const NOTICE_TITLE_CHARS = 40;
const day = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });

let hooks = { open: async () => {}, reload: async () => {} };

/** What a restore does next: `open(threadId)` shows it, `reload()` reloads the thread list. */
export function wireTrash({ open, reload }) {
  hooks = { open, reload };
}

export async function loadTrash() {
  try {
    setTrash(await api('GET', '/trash'));
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return;
    showError(`Could not load the trash: ${describe(err)}`);
  }
}

/** How many days a deleted thread stays restorable (null when the server cannot be asked). */
export async function trashDays() {
  if (state.trash) return state.trash.trash_days;
  try {
    return (await api('GET', '/trash?limit=0')).trash_days;
  } catch {
    return null;
  }
}

/** What deleting does, in words for the delete dialog. */
export function deletionWords(days) {
  if (days === 0) {
    return 'It is removed for good at once — its messages, tool calls and runs — and cannot be '
      + 'restored.';
  }
  const kept = days === null ? 'for a while' : `for ${days === 1 ? '1 day' : `${days} days`}`;
  return `It goes to the trash (at the foot of the thread list), where you can restore it ${kept}; `
    + 'then it is removed for good with its messages, tool calls and runs. Until then it stays '
    + 'in your account export, and the assistant can no longer find or read it.';
}

/** After a deletion: say where the thread went, with Undo (a restore) while it can be. `quiet`:
 * the deletion forgot memory lines, and that notice (with its own Undo) is the one to show. */
export function noteTrashed(threadId, title, days, { quiet = false } = {}) {
  if (state.showTrash) loadTrash();
  if (quiet) return;
  if (days === 0) {
    showNotice(`“${shortText(title, NOTICE_TITLE_CHARS)}” was deleted for good.`);
    return;
  }
  showNotice(`“${shortText(title, NOTICE_TITLE_CHARS)}” is in the trash.`, {
    owner: 'trash',
    action: { label: 'Undo', run: () => restoreThread(threadId, title, false) },
  });
}

export async function onTrashToggle() {
  const open = !state.showTrash;
  setShowTrash(open);
  if (open) await loadTrash();
}

async function restoreThread(threadId, title, forgotten) {
  try {
    await api('POST', `/trash/${encodeURIComponent(threadId)}/restore`);
  } catch (err) {
    showError(`Could not restore the thread: ${describe(err)}`);
    if (err instanceof ApiError && err.status === 404) await loadTrash();
    return;
  }
  setShowTrash(false);
  setShowArchived(false);
  setTrash(null);
  await hooks.reload();
  await hooks.open(threadId);
  const name = `“${shortText(title, NOTICE_TITLE_CHARS)}”`;
  showNotice(forgotten
    ? `Restored ${name}. The memory lines it wrote stay forgotten (Versions can undo that).`
    : `Restored ${name}.`);
}

async function deleteNow(t) {
  const title = t.title || 'New thread';
  const ok = await confirmDialog({
    title: `Delete “${shortText(title, TITLE_CHARS)}” now?`,
    message: 'It is removed for good at once: its messages, tool calls and runs. This cannot be '
      + 'undone. What it saved to your memory stays in your memory.',
    confirm: 'Delete now',
    danger: true,
  });
  if (!ok) return;
  try {
    await api('DELETE', `/trash/${encodeURIComponent(t.thread_id)}`);
    showNotice(`“${shortText(title, NOTICE_TITLE_CHARS)}” was deleted for good.`);
  } catch (err) {
    showError(`Could not delete the thread: ${describe(err)}`);
  }
  await loadTrash();
}

function trashItem(t, days) {
  const title = t.title || 'New thread';
  const until = days === 0 ? 'Being removed now'
    : `Removed for good after ${day.format(new Date(t.purge_after))}`;
  return el('li', {
    class: 'thread-row trash-row', 'data-testid': 'trash-item', 'data-thread-id': t.thread_id,
  },
  el('div', { class: 'trash-text' },
    el('span', { class: 'thread-name', 'data-testid': 'trash-title', title }, shortText(title, TITLE_CHARS)),
    el('span', { class: 'small muted' }, 'Deleted ', timeElement(t.deleted_at)),
    el('span', { class: 'small muted', 'data-testid': 'trash-until' }, until),
    t.memory_forgotten
      ? el('span', { class: 'small muted trash-forgotten', 'data-testid': 'trash-forgotten' },
        'Its memory lines were forgotten; a restore does not bring them back.')
      : null),
  el('div', { class: 'trash-actions' },
    el('button', {
      type: 'button', class: 'small', 'data-testid': 'trash-restore',
      title: `Restore “${shortText(title, TITLE_CHARS)}” to your threads`,
      onclick: () => restoreThread(t.thread_id, title, t.memory_forgotten),
    }, 'Restore'),
    el('button', {
      type: 'button', class: 'ghost small danger-text', 'data-testid': 'trash-delete-now',
      onclick: () => deleteNow(t),
    }, 'Delete now')));
}

/** The sidebar's trash view (shown instead of the lists while `showTrash`). */
export function renderTrash() {
  const open = state.showTrash;
  $('sidebar').classList.toggle('trash-open', open);
  $('trash-view').hidden = !open;
  $('trash-toggle').setAttribute('aria-pressed', open ? 'true' : 'false');
  const trash = state.trash;
  const threads = trash ? trash.threads : [];
  $('trash-list').replaceChildren(...threads.map((t) => trashItem(t, trash.trash_days)));
  $('trash-empty').hidden = !trash || threads.length > 0;
  const days = trash?.trash_days;
  $('trash-note').textContent = days === undefined ? 'Loading…'
    : days === 0 ? 'Deleted threads are removed for good at once.'
      : `Deleted threads stay here ${days === 1 ? '1 day' : `${days} days`}, then they are `
        + 'removed for good. Restoring brings back everything but memory lines a deletion forgot.';
}
