// A link to one of the user's threads (and, for a hit, one of its messages), as the history tool
// cards and the search box show them: the thread's title as the text, the id only in the href
// and data attributes (never in prose). A click opens the thread in the app, no page load
// (threads.js `openLinkedThread`, wired by app.js); a thread that can no longer be opened turns
// every link to it into plain text that says so.

import { el, shortText } from './dom.js';

/** Titles longer than this are cut in a link (the full title stays in the tooltip). */
const LINK_TITLE_CHARS = 90;

let hooks = { open: async () => 'opened' };

/** What a click does: `open(threadId, messageId)` resolves 'opened', 'gone' or 'failed'. */
export function wireThreadLinks({ open }) {
  hooks = { open };
}

/** The href of a thread (and message): the same `#thread=` the app reads when it loads. */
export function threadHref(threadId, messageId = null) {
  const params = new URLSearchParams({ thread: threadId });
  if (messageId !== null && messageId !== undefined) params.set('message', String(messageId));
  return `#${params}`;
}

// Threads found gone in this page's life (ids are never reused, so this only grows).
const goneThreads = new Set();

function showGone(link) {
  if (link.dataset.gone === 'true') return;
  link.dataset.gone = 'true';
  link.removeAttribute('href');
  link.setAttribute('aria-disabled', 'true');
  link.title = 'This thread was deleted: restore it from the trash (while it is there) to open it.';
  link.append(el('span', { class: 'thread-gone', 'data-testid': 'thread-link-gone' }, '(deleted)'));
}

/** Every link to `threadId`, shown now or later, says the thread is gone and goes nowhere. */
export function markThreadGone(threadId) {
  goneThreads.add(threadId);
  for (const link of document.querySelectorAll(
    `a.thread-link[data-thread-id="${CSS.escape(threadId)}"]`)) showGone(link);
}

async function onClick(event, link) {
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) {
    return; // a new tab or window: the href opens the app there
  }
  event.preventDefault();
  if (link.dataset.gone === 'true' || link.dataset.opening === 'true') return;
  link.dataset.opening = 'true';
  try {
    const messageId = link.dataset.messageId ? Number(link.dataset.messageId) : null;
    const outcome = await hooks.open(link.dataset.threadId, messageId);
    if (outcome === 'gone') markThreadGone(link.dataset.threadId);
  } finally {
    delete link.dataset.opening;
  }
}

/** A link to `threadId` titled `title` (at `messageId` when given). */
export function threadLink(threadId, title, messageId = null, attrs = {}) {
  const name = String(title || '').trim() || 'Untitled thread';
  const link = el('a', {
    class: 'thread-link',
    href: threadHref(threadId, messageId),
    title: name,
    'data-thread-id': threadId,
    'data-message-id': messageId ?? null,
    ...attrs,
  }, shortText(name, LINK_TITLE_CHARS));
  link.addEventListener('click', (event) => onClick(event, link));
  if (goneThreads.has(threadId)) showGone(link);
  return link;
}
