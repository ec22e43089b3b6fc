// The history tools' cards read like answers: `search_thread_messages`, `list_threads` and
// `read_thread_messages` show each hit or thread with its title as a link that opens it in the
// app (thread_link.js), a time in words (when.js) and its text; the ids stay in hrefs and data
// attributes, never in prose. The JSON the model saw stays under the card's "Details".
// Built alike from a live `tool_end` and from a thread's stored tool calls (transcript.js).

import { el, parseJson } from './dom.js';
import { markedText } from './marks.js';
import { threadLink } from './thread_link.js';
import { timeElement } from './when.js';

export const HISTORY_TOOLS = new Set(['search_thread_messages', 'list_threads', 'read_thread_messages']);

const SPEAKER = { user: 'You', assistant: 'Yuxi' };

function speaker(role) {
  return SPEAKER[role] || String(role || '');
}

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

/** What the call asked for, in words (shown while it runs, and above its answer). */
export function historyCallText(name, args = {}) {
  const range = [
    args.after ? `from ${args.after}` : '',
    args.before ? `before ${args.before}` : '',
  ].filter(Boolean).join(', ');
  if (name === 'search_thread_messages') {
    const where = args.thread_id ? ' in one thread' : '';
    return `Searched your past conversations${where} for «${String(args.query ?? '')}»${range ? ` (${range})` : ''}`;
  }
  if (name === 'list_threads') return `Listed your recent conversations${range ? ` (${range})` : ''}`;
  if (name === 'read_thread_messages') {
    return args.message_id !== undefined && args.message_id !== null
      ? 'Read a past conversation around one message'
      : 'Read a past conversation';
  }
  return name;
}

function note(text, testid) {
  return el('p', { class: 'history-note muted small', 'data-testid': testid }, text);
}

/** A neighbour of a hit ({role, content, truncated?}): dimmed, above or below it. The server
 * keeps the end of the message before and the start of the one after; "…" marks what it cut. */
function neighbour(side, message) {
  if (!message || typeof message !== 'object') return null;
  const text = String(message.content ?? '');
  const cut = message.truncated === true;
  return el('p', { class: 'hit-neighbour', 'data-testid': `hit-${side}` },
    el('span', { class: 'hit-role' }, `${speaker(message.role)}: `),
    cut && side === 'before' ? `…${text}` : cut ? `${text}…` : text);
}

/** One search hit: title link (to the message), time and speaker, the snippet with its
 * neighbours. Shared with the search box (thread_search.js). */
export function hitItem(hit, query, testid = 'history-hit') {
  return el('li', {
    class: 'history-hit', 'data-testid': testid,
    'data-thread-id': hit.thread_id, 'data-message-id': hit.message_id ?? null, 'data-role': hit.role || null,
  },
  el('div', { class: 'hit-head' },
    threadLink(hit.thread_id, hit.title, hit.message_id ?? null, { 'data-testid': 'history-link' }),
    el('span', { class: 'hit-meta muted small' },
      timeElement(hit.created_at, { 'data-testid': 'history-time' }),
      ` · ${speaker(hit.role)}`)),
  neighbour('before', hit.before),
  el('p', { class: 'hit-text', 'data-testid': 'history-snippet' }, markedText(hit.content ?? '', query)),
  neighbour('after', hit.after));
}

function searchBody(result, args) {
  const items = Array.isArray(result.items) ? result.items : null;
  if (!items) return null;
  const query = String(args.query ?? '');
  if (!items.length) return [note(`Nothing found for «${query}».`, 'history-empty')];
  const parts = [el('ol', { class: 'history-hits' }, ...items.map((hit) => hitItem(hit, query)))];
  if (result.truncated) parts.push(note('Lower-ranked matches were left out.', 'history-flag'));
  if (result.complete === false) {
    parts.push(note('Only the newest messages were ranked for the commonest words.', 'history-flag'));
  }
  if (Array.isArray(result.left_out_terms) && result.left_out_terms.length) {
    parts.push(note(`Not searched: ${result.left_out_terms.join(', ')}.`, 'history-flag'));
  }
  return parts;
}

function threadItem(thread) {
  const count = Number(thread.message_count);
  return el('li', { class: 'history-thread', 'data-testid': 'history-thread', 'data-thread-id': thread.thread_id },
    el('div', { class: 'hit-head' },
      threadLink(thread.thread_id, thread.title, null, { 'data-testid': 'history-link' }),
      el('span', { class: 'hit-meta muted small' },
        timeElement(thread.last_message_at, { 'data-testid': 'history-time' }),
        Number.isFinite(count) ? ` · ${plural(count, 'message', 'messages')}` : '')),
    thread.first_user_line
      ? el('p', { class: 'hit-text', 'data-testid': 'history-snippet' }, String(thread.first_user_line))
      : null);
}

function listBody(result) {
  const items = Array.isArray(result.items) ? result.items : null;
  if (!items) return null;
  if (!items.length) return [note('No past conversations to list.', 'history-empty')];
  const parts = [el('ol', { class: 'history-threads' }, ...items.map(threadItem))];
  if (result.has_more) parts.push(note('There are older ones.', 'history-flag'));
  return parts;
}

function readBody(result, args) {
  const messages = Array.isArray(result.messages) ? result.messages : null;
  if (!messages || typeof result.thread_id !== 'string') return null;
  const anchor = args.message_id ?? null;
  const head = el('div', { class: 'hit-head' },
    threadLink(result.thread_id, result.title, anchor, { 'data-testid': 'history-link' }),
    el('span', { class: 'hit-meta muted small' }, plural(messages.length, 'message', 'messages')));
  const list = el('ol', { class: 'history-read' }, ...messages.map((m) => el('li', {
    class: 'history-message', 'data-testid': 'history-message', 'data-message-id': m.message_id ?? null,
    'data-anchor': anchor !== null && String(m.message_id) === String(anchor) ? 'true' : null,
  },
  el('span', { class: 'hit-role' }, `${speaker(m.role)}: `), String(m.content ?? ''))));
  const parts = [head, messages.length ? list : note('No messages.', 'history-empty')];
  const calls = Array.isArray(result.tool_calls) ? result.tool_calls : [];
  if (calls.length) {
    parts.push(note(`With ${plural(calls.length, 'tool call', 'tool calls')}: `
      + calls.map((c) => `${c.name} (${c.status})`).join(', '), 'history-flag'));
  }
  if (result.truncated) parts.push(note('Some of it was left out to stay within the reading budget.', 'history-flag'));
  return parts;
}

/**
 * The readable answer of a successful history call, or null when `text` is not a result of that
 * shape (cut to the event's size, or another shape): the card then shows the JSON only.
 */
export function historyAnswer(name, args, text) {
  const result = parseJson(text);
  if (!result || typeof result !== 'object') return null;
  const body = name === 'search_thread_messages' ? searchBody(result, args || {})
    : name === 'list_threads' ? listBody(result)
      : name === 'read_thread_messages' ? readBody(result, args || {})
        : null;
  return body ? el('div', { class: 'history-answer', 'data-testid': 'history-answer' }, ...body) : null;
}
