// The search box over the thread list: the owner's own search of their messages
// (`GET /search`: every active ordinary thread, those hidden from recall too; memory need not be
// on). Typing waits for a pause, a newer query cancels the request of an older one, Escape
// clears; while there is a query the hits take the thread list's place. Each hit is a title link
// that opens its thread at the message (history_cards.js `hitItem`, thread_link.js), with its
// time in words and its snippet, the query's words marked.

import { api, ApiError, describe } from './api.js';
import { $ } from './dom.js';
import { hitItem } from './history_cards.js';

/** How long typing must pause before a search is sent. */
export const SEARCH_DEBOUNCE_MS = 300;
/** Hits asked for (the server allows 1–20). */
const SEARCH_LIMIT = 10;

let timer = null;
let inFlight = null; // the AbortController of the request whose answer is still wanted

function show(id, text) {
  $(id).textContent = text;
  $(id).hidden = !text;
}

function cancel() {
  clearTimeout(timer);
  timer = null;
  inFlight?.abort();
  inFlight = null;
}

/** Back to the thread list: no query, no hits, nothing pending. */
export function resetSearch() {
  cancel();
  $('thread-search-input').value = '';
  $('sidebar').classList.remove('searching');
  show('thread-search-status', '');
  show('thread-search-error', '');
  $('thread-search-hits').replaceChildren();
  $('thread-search-hits').hidden = true;
}

function render(query, body) {
  const items = Array.isArray(body?.items) ? body.items : [];
  const hits = $('thread-search-hits');
  hits.replaceChildren(...items.map((hit) => hitItem(hit, query, 'search-hit')));
  hits.hidden = !items.length;
  const notes = [];
  if (body?.truncated) notes.push('More matches were left out.');
  if (body?.complete === false) {
    notes.push('Only recent messages were ranked for the commonest words: add a rarer word.');
  }
  if (Array.isArray(body?.left_out_terms) && body.left_out_terms.length) {
    notes.push(`Not searched: ${body.left_out_terms.join(', ')}.`);
  }
  const count = items.length === 1 ? '1 message matches' : `${items.length} messages match`;
  show('thread-search-status', items.length
    ? [`${count} «${query}».`, ...notes].join(' ')
    : `No messages match «${query}».`);
}

async function search(query) {
  cancel();
  const mine = new AbortController();
  inFlight = mine;
  show('thread-search-error', '');
  show('thread-search-status', 'Searching…');
  let body;
  try {
    const params = new URLSearchParams({ q: query, limit: String(SEARCH_LIMIT) });
    body = await api('GET', `/search?${params}`, { signal: mine.signal });
  } catch (err) {
    if (mine.signal.aborted) return; // a newer query (or a reset) took over
    inFlight = null;
    $('thread-search-hits').replaceChildren();
    $('thread-search-hits').hidden = true;
    show('thread-search-status', '');
    // a refused query (empty, too long, no word) is the server's own words
    show('thread-search-error', err instanceof ApiError && err.status === 400
      ? err.message : `Could not search: ${describe(err)}`);
    return;
  }
  if (mine.signal.aborted) return;
  inFlight = null;
  render(query, body);
}

/** Typing: search once the typing pauses; a blank box is the thread list again. */
export function onSearchInput() {
  const query = $('thread-search-input').value;
  if (!query.trim()) {
    resetSearch();
    $('thread-search-input').value = query;
    return;
  }
  cancel();
  $('sidebar').classList.add('searching');
  timer = setTimeout(() => search(query), SEARCH_DEBOUNCE_MS);
}

/** Enter searches now; Escape clears the box (and only when it is empty closes the drawer). */
export function onSearchKey(event) {
  if (event.key === 'Enter' && !event.isComposing) {
    event.preventDefault();
    const query = $('thread-search-input').value;
    if (query.trim()) search(query);
  } else if (event.key === 'Escape' && $('thread-search-input').value) {
    event.preventDefault();
    event.stopPropagation();
    resetSearch();
  }
}
