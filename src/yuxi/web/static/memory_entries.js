// The entries mode of the memory panel: one card per entry of MEMORY.md with where it came from,
// what the lint found, whether the assistant sees it; inline edit and delete (each saves the
// whole file with If-Match); a filter box; and the meter of bytes against the two limits.

import { describe } from './api.js';
import { $, byteLength, el, formatTime } from './dom.js';
import { saveWholeFile } from './memory_editor.js';
import { loadMemory, setMemoryStatus } from './memory_store.js';
import { state } from './state.js';
import { MEMORY_LINT_TEXT } from './vocabulary.js';

let hooks = { openSource: () => {} };

/** What a source link does: open that thread at that message (app.js wires it). */
export function wireMemoryEntries({ openSource }) {
  hooks = { openSource };
}

let draft = null; // the entry being edited: {index, original, text}

export function hasEntryDraft() {
  return Boolean(draft && draft.text !== draft.original);
}

export function dropEntryDraft() {
  draft = null;
}

// -- the meter ------------------------------------------------------------------------------------

function kib(bytes) {
  const n = Number(bytes) || 0;
  if (n < 1024) return `${n} bytes`;
  const value = n / 1024;
  return `${value < 10 && value % 1 ? value.toFixed(1) : Math.round(value)} KiB`;
}

function renderMeter(view) {
  const size = Number(view.size) || 0;
  const window = Number(view.prompt_window_bytes) || 1;
  const limit = Number(view.file_limit_bytes) || 1;
  const seen = $('memory-meter-window');
  seen.max = window;
  seen.high = window * 0.9;
  seen.value = Math.min(size, window);
  const file = $('memory-meter-file');
  file.max = limit;
  file.high = limit * 0.9;
  file.value = Math.min(size, limit);
  $('memory-meter-window-text').textContent = size > window
    ? `${kib(size)} used: the assistant sees only the first ${kib(window)}`
    : `${kib(size)} of the ${kib(window)} the assistant sees`;
  $('memory-meter-file-text').textContent = `${kib(size)} of the ${kib(limit)} file limit`;
  $('memory-meter').dataset.over = size > window ? 'true' : 'false';
}

// -- one entry -------------------------------------------------------------------------------------

function sourceLine(source) {
  const line = el('div', { class: 'entry-source small muted', 'data-testid': 'memory-entry-source' });
  if (!source) {
    line.append('no recorded source');
    return line;
  }
  const when = formatTime(source.at);
  if (source.actor === 'agent') {
    line.dataset.actor = 'agent';
    if (source.thread_id && source.source_available !== false) {
      line.append('from ', el('a', {
        href: `#thread=${encodeURIComponent(source.thread_id)}`,
        class: 'link',
        'data-testid': 'memory-entry-source-link',
        'data-thread-id': source.thread_id,
        onclick: (e) => {
          e.preventDefault();
          hooks.openSource(source.thread_id, source.message_id ?? null);
        },
      }, source.thread_title || 'a thread'), when ? `, ${when}` : '');
    } else if (!source.thread_id) {
      // purged from the trash: the version keeps the text, not the link (design.md §12.3)
      line.append(el('span', { 'data-testid': 'memory-entry-source-gone' },
        `from a deleted thread${when ? `, ${when}` : ''}`));
    } else {
      line.append(`from a thread${when ? `, ${when}` : ''} · `,
        el('span', { 'data-testid': 'memory-entry-source-gone' }, 'source no longer available'));
    }
  } else if (source.actor === 'user') {
    line.dataset.actor = 'user';
    line.dataset.kind = String(source.kind || '');
    // an imported file's entries say so: they came from outside, not from the user's typing
    const verb = { restore: 'restored', undo: 'restored', import: 'imported' }[source.kind] || 'edited';
    line.append(`${verb} by you${when ? `, ${when}` : ''}`);
  } else {
    line.dataset.actor = String(source.actor || '');
    line.append(`found in the file${when ? `, ${when}` : ''}`);
  }
  return line;
}

function lintChips(findings) {
  if (!findings.length) return null;
  return el('ul', { class: 'entry-lint' }, ...findings.map((f) => el('li', {
    class: `lint-chip lint-${f.code}`,
    'data-testid': 'memory-lint',
    'data-code': f.code,
    title: f.message || '',
  }, MEMORY_LINT_TEXT[f.code] || String(f.code), f.message ? `: ${f.message}` : '')));
}

const OUTSIDE = 'outside_prompt_window';

function entryCard(entry, findings) {
  const card = el('li', {
    class: 'memory-entry',
    'data-testid': 'memory-entry',
    'data-index': entry.index,
    'data-version-id': entry.source?.version_id || '',
    'data-in-window': entry.in_prompt_window === false ? 'false' : 'true',
  });
  const edit = el('button', { type: 'button', class: 'ghost small', 'data-testid': 'memory-entry-edit' }, 'Edit');
  const del = el('button', {
    type: 'button', class: 'ghost small danger-text', 'data-testid': 'memory-entry-delete',
  }, 'Delete');
  edit.addEventListener('click', () => startEdit(card, entry));
  del.addEventListener('click', () => deleteEntry(entry));
  // being outside the window is said once, as the entry's mark (the lint's words when it has them)
  const outside = findings.find((f) => f.code === OUTSIDE);
  const parts = [
    el('div', { class: 'entry-head' }, sourceLine(entry.source), el('span', { class: 'spacer' }), edit, del),
    el('div', { class: 'entry-text', 'data-testid': 'memory-entry-text' }, entry.text),
    entry.in_prompt_window === false || outside
      ? el('p', {
        class: 'entry-outside small', 'data-testid': 'memory-entry-outside', 'data-code': outside ? OUTSIDE : null,
      }, outside?.message || 'Beyond what the assistant sees: it does not know this.')
      : null,
    lintChips(findings.filter((f) => f.code !== OUTSIDE)),
  ];
  card.append(...parts.filter(Boolean));
  return card;
}

// -- the list ---------------------------------------------------------------------------------------

export function renderMemoryEntries() {
  const view = state.memoryView;
  const list = $('memory-entries');
  // nothing loaded (yet, or the load failed): no meter with blank labels, no "nothing in memory"
  $('memory-meter').hidden = !view;
  if (!view) {
    list.replaceChildren();
    $('memory-entries-empty').hidden = true;
    return;
  }
  renderMeter(view);
  const entries = view.entries || [];
  const lint = view.lint || [];
  const byEntry = new Map();
  for (const f of lint) {
    const key = f.entry_index ?? null;
    if (!byEntry.has(key)) byEntry.set(key, []);
    byEntry.get(key).push(f);
  }
  const general = byEntry.get(null) || [];
  $('memory-lint-general').replaceChildren(...(lintChips(general) ? [lintChips(general)] : []));
  const kept = draft && entries.find((e) => e.index === draft.index && e.text === draft.original);
  if (!kept) draft = null;
  list.replaceChildren(...entries.map((e) => {
    const card = entryCard(e, byEntry.get(e.index) || []);
    if (kept && e === kept) startEdit(card, e, draft.text);
    return card;
  }));
  $('memory-entries-empty').hidden = entries.length > 0;
  applyFilter();
}

export function applyFilter() {
  const query = $('memory-filter').value.trim().toLowerCase();
  const cards = [...$('memory-entries').querySelectorAll('[data-testid="memory-entry"]')];
  let shown = 0;
  for (const card of cards) {
    const text = card.querySelector('[data-testid="memory-entry-text"], textarea');
    const value = (text.value ?? text.textContent).toLowerCase();
    card.hidden = Boolean(query) && !value.includes(query);
    if (!card.hidden) shown += 1;
  }
  const count = $('memory-filter-count');
  count.textContent = query ? `${shown} of ${cards.length}` : '';
}

/** Scroll to and mark the entry a receipt points at (by its version, else by its text). */
export function highlightEntry({ versionId = null, text = '' } = {}) {
  const cards = [...$('memory-entries').querySelectorAll('[data-testid="memory-entry"]')];
  for (const card of cards) delete card.dataset.highlighted;
  const needle = text.trim();
  const found = cards.find((c) => versionId && c.dataset.versionId === versionId)
    || cards.find((c) => needle && c.querySelector('[data-testid="memory-entry-text"]')
      ?.textContent.includes(needle));
  if (!found) return false;
  if (found.hidden) {
    $('memory-filter').value = '';
    applyFilter();
  }
  found.dataset.highlighted = 'true';
  found.scrollIntoView({ block: 'center' });
  return true;
}

// -- editing one entry --------------------------------------------------------------------------------

/** The file with lines `start..end` (1-based, inclusive) replaced by `text` ('' removes them). */
export function spliceEntry(file, entry, text) {
  const lines = file.split('\n');
  const start = entry.start_line - 1;
  let count = entry.end_line - entry.start_line + 1;
  const current = lines.slice(start, start + count).join('\n');
  if (current.replace(/\r$/gm, '').trim() !== String(entry.text).trim()) return null; // not what we showed
  if (text.trim()) {
    lines.splice(start, count, ...text.replace(/\n+$/, '').split('\n'));
    return lines.join('\n');
  }
  // removing: take one blank separator line with it (the next one, else the previous one)
  let from = start;
  if (lines[start + count] !== undefined && lines[start + count].trim() === '' && start + count < lines.length - 1) {
    count += 1;
  } else if (start > 0 && lines[start - 1].trim() === '') {
    from -= 1;
    count += 1;
  }
  lines.splice(from, count);
  const result = lines.join('\n');
  return result.trim() ? result : '';
}

async function writeEntry(entry, text, { message, undoLabel }) {
  const file = spliceEntry(state.memory.text, entry, text);
  if (file === null) {
    await loadMemory();
    setMemoryStatus('The memory changed since it was shown: look at the entry again.');
    return false;
  }
  return saveWholeFile(file, state.memory.etag, { message, undoLabel });
}

function startEdit(card, entry, text = entry.text) {
  draft = { index: entry.index, original: entry.text, text };
  const box = el('textarea', {
    class: 'entry-editor',
    'data-testid': 'memory-entry-editor',
    'aria-label': 'Edit this entry',
    rows: Math.min(12, Math.max(2, text.split('\n').length + 1)),
  });
  box.value = text;
  box.addEventListener('input', () => { if (draft) draft.text = box.value; });
  const save = el('button', { type: 'button', class: 'primary small', 'data-testid': 'memory-entry-save' }, 'Save');
  const cancel = el('button', { type: 'button', class: 'small', 'data-testid': 'memory-entry-cancel' }, 'Cancel');
  const form = el('div', { class: 'entry-edit' }, box,
    el('div', { class: 'entry-edit-actions' }, save, cancel,
      el('span', { class: 'muted small' }, 'Saving writes the whole MEMORY.md.')));
  cancel.addEventListener('click', () => {
    draft = null;
    renderMemoryEntries();
  });
  save.addEventListener('click', async () => {
    save.disabled = true;
    const wanted = box.value;
    const mine = draft;
    draft = null; // a successful save re-renders the list without this editor
    let done = false;
    try {
      done = await writeEntry(entry, wanted, {
        message: wanted.trim() ? `Entry saved · ${byteLength(wanted)} bytes.` : 'Entry deleted.',
        undoLabel: wanted.trim() ? 'Edit' : 'Delete',
      });
    } catch (err) {
      setMemoryStatus(`Not saved: ${describe(err)}`);
    } finally {
      save.disabled = false;
    }
    if (!done && box.isConnected) draft = mine; // still on screen: still unsaved
  });
  card.dataset.editing = 'true';
  card.querySelector('[data-testid="memory-entry-text"]').replaceWith(form);
  for (const b of card.querySelectorAll('.entry-head button')) b.disabled = true;
  box.focus();
}

async function deleteEntry(entry) {
  await writeEntry(entry, '', { message: 'Entry deleted.', undoLabel: 'Delete' });
}
