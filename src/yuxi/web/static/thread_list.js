// The sidebar's thread list (ordinary or archived threads) and the chat header's view of the open
// thread: its title, its id (for "read thread: <id>") and the buttons that fit its status.
// Rendering only: what a click does comes through `wireThreadList`.

import { $, el, formatTime, shortText } from './dom.js';
import { closeDrawer } from './drawer.js';
import { state } from './state.js';
import { renderThreadSettings } from './thread_settings.js';

/** Titles longer than this are cut (the full title stays in the tooltip). */
const LIST_TITLE_CHARS = 80;
const HEADER_TITLE_CHARS = 120;

let hooks = { select: () => {}, restore: () => {} };

/** What a thread item's click and its Restore button do. */
export function wireThreadList({ select, restore }) {
  hooks = { select, restore };
}

function threadItem(t) {
  const title = t.title || 'New thread';
  const archived = t.status === 'archived';
  return el('li', { class: 'thread-row' },
    el('button', {
      type: 'button',
      class: 'thread-item',
      'data-testid': 'thread-item',
      'data-thread-id': t.thread_id,
      'data-status': t.status || null,
      'aria-current': t.thread_id === state.threadId ? 'true' : null,
      title,
      // choosing the open thread again only closes the drawer (on a phone)
      onclick: () => {
        if (t.thread_id !== state.threadId) hooks.select(t.thread_id);
        else closeDrawer();
      },
    },
    el('span', { class: 'thread-name', 'data-testid': 'thread-title-text' }, shortText(title, LIST_TITLE_CHARS)),
    el('span', { class: 'thread-meta' },
      el('time', { class: 'thread-time', datetime: t.updated_at }, formatTime(t.updated_at)),
      t.recall_excluded
        ? el('span', {
          class: 'thread-flag', 'data-testid': 'thread-recall-hidden', title: 'The assistant never recalls this thread',
        }, 'hidden from recall')
        : null)),
    archived
      ? el('button', {
        type: 'button',
        class: 'ghost small thread-restore',
        'data-testid': 'thread-restore',
        title: `Restore “${shortText(title, LIST_TITLE_CHARS)}” to your threads`,
        onclick: () => hooks.restore(t.thread_id),
      }, 'Restore')
      : null);
}

function renderSidebar() {
  $('thread-list').replaceChildren(...state.threads.map(threadItem));
  $('thread-empty').hidden = state.threads.length > 0;
  $('thread-empty').textContent = state.showArchived
    ? 'No archived threads.'
    : 'No threads yet. Start one, or just type a message.';
  $('archived-toggle').setAttribute('aria-pressed', state.showArchived ? 'true' : 'false');
  $('archived-toggle').textContent = state.showArchived ? '← Back to threads' : 'Archived threads';
  $('thread-list-heading').textContent = state.showArchived ? 'Archived' : 'Threads';
  $('new-thread').hidden = state.showArchived;
}

function renderHeader() {
  const current = state.threads.find((t) => t.thread_id === state.threadId);
  const title = current ? (current.title || 'New thread') : 'New thread';
  $('thread-title').textContent = shortText(title, HEADER_TITLE_CHARS);
  $('thread-title').title = title;
  const archived = current?.status === 'archived';
  $('archive-thread').hidden = !current || archived;
  $('restore-thread').hidden = !archived;
  $('delete-thread').hidden = !current;
  $('thread-id-row').hidden = !current;
  $('thread-id').textContent = current ? current.thread_id : '';
  $('copy-thread-id').textContent = 'Copy';
  $('thread-archived-note').hidden = !archived;
}

/** The sidebar and the chat header; re-rendered whenever the threads or the open one change. */
export function renderThreads() {
  renderSidebar();
  renderHeader();
  renderThreadSettings();
}

/** Copy the open thread's id (so that "read thread: <id>" can be typed or pasted). */
export async function onCopyThreadId() {
  const id = $('thread-id').textContent;
  if (!id) return;
  const button = $('copy-thread-id');
  try {
    await navigator.clipboard.writeText(id);
    button.textContent = 'Copied';
  } catch {
    // no clipboard (e.g. denied): select the id so that the user can copy it by hand
    getSelection()?.selectAllChildren($('thread-id'));
    button.textContent = 'Selected';
  }
}
