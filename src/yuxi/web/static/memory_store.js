// The memory panel's traffic with the server, shared by its views (entries, raw editor, versions)
// and by the write receipts in the chat: loading the file and its entry view, writing the whole
// file with If-Match, the audit trail (versions, undo, restore), and the panel's status line.

import { api, ApiError, describe, filePath } from './api.js';
import { clearNotice, noticeOwner, showNotice } from './banner.js';
import { $, byteLength, el } from './dom.js';
import { setMemoryView, state, updateMemory } from './state.js';
import { MEMORY_PATH } from './vocabulary.js';

export const MEMORY_API = '/memory';

export function versionPath(versionId, tail = '') {
  return `${MEMORY_API}/versions/${encodeURIComponent(versionId)}${tail}`;
}

/** Compare ETags whatever their quoting: `"abc"`, `W/"abc"` and `abc` name the same version. */
export function sameEtag(a, b) {
  const bare = (tag) => String(tag ?? '').replace(/^W\//, '').replace(/^"|"$/g, '');
  return Boolean(a) && Boolean(b) && bare(a) === bare(b);
}

// -- the status line (and the one Undo it may offer) ---------------------------------------------

let statusUndo = null; // {versionId, label}: what the status line's Undo button reverts

/**
 * Say `text` on the panel's status line, with an Undo of `undo` when given. The line is in the
 * panel: while the panel is closed, a status with an Undo (e.g. lines forgotten with a deleted
 * thread) shows in the app's notice too, with the same Undo, and what follows it there as well.
 */
export function setMemoryStatus(text, { undo = null } = {}) {
  statusUndo = undo;
  const line = $('memory-status');
  const button = $('memory-status-undo');
  line.textContent = text;
  button.hidden = !undo;
  button.dataset.versionId = undo?.versionId || '';
  const panelClosed = $('memory-panel').hidden;
  if (undo && panelClosed) {
    showNotice(text, { owner: 'memory', action: { label: 'Undo', run: onStatusUndo } });
  } else if (noticeOwner() === 'memory') {
    if (text && panelClosed) showNotice(text, { owner: 'memory', action: null });
    else clearNotice('memory');
  }
}

/** The panel opens: its status line says what the notice said. */
export function memoryStatusInPanel() {
  clearNotice('memory');
}

/** The status line's Undo: revert the change it announced. */
export async function onStatusUndo() {
  const undo = statusUndo;
  if (!undo) return;
  $('memory-status-undo').disabled = true;
  try {
    await undoVersion(undo.versionId);
    setMemoryStatus(`${undo.label} undone.`);
  } catch (err) {
    setMemoryStatus(err instanceof ApiError && err.status === 409
      ? 'Not undone: the memory changed since. Restore an older version from Versions.'
      : `Not undone: ${describe(err)}`);
  } finally {
    $('memory-status-undo').disabled = false;
    await loadMemory();
  }
}

// -- loading ------------------------------------------------------------------------------------

/** The raw file and its ETag (none: there is no file yet). */
export async function fetchRawMemory() {
  try {
    const resp = await api('GET', filePath(MEMORY_PATH), { raw: true });
    return { text: await resp.text(), etag: resp.headers.get('ETag') };
  } catch (err) {
    if (err instanceof ApiError && (err.code === 'file_not_found' || err.status === 404)) {
      return { text: '', etag: null };
    }
    throw err;
  }
}

let failedLoad = null; // the status line's text after the last load failed (null: it did not)

/** Did the last load fail? (Then the next chance to load again should be taken.) */
export function memoryLoadFailed() {
  return failedLoad !== null;
}

/** "Loaded · N bytes" for the file as last loaded. */
export function loadedText() {
  const size = Number(state.memoryView?.size) || byteLength(state.memory.text);
  return size ? `Loaded · ${size} bytes` : 'Loaded · the file is empty';
}

/**
 * Load the entry view and the raw file. They are two requests: when a write slipped in between
 * (their ETags differ) both are asked for again, once. A dirty raw draft is left alone unless
 * `discardDraft`; the draft keeps the ETag it was based on.
 */
export async function loadMemory({ discardDraft = false } = {}) {
  updateMemory({ busy: true });
  $('memory-panel').dataset.loaded = 'false';
  let view;
  let raw;
  try {
    for (let attempt = 0; attempt < 2; attempt += 1) {
      [view, raw] = await Promise.all([api('GET', MEMORY_API), fetchRawMemory()]);
      if (!raw.etag || !view.etag || sameEtag(raw.etag, view.etag)) break;
    }
  } catch (err) {
    updateMemory({ busy: false });
    failedLoad = `Could not load: ${describe(err)}`;
    setMemoryStatus(failedLoad);
    $('memory-panel').dataset.loadFailed = 'true';
    return false;
  }
  const keepDraft = state.memory.dirty && !discardDraft;
  updateMemory({
    busy: false,
    loaded: true,
    text: raw.text,
    etag: raw.etag || view.etag || null,
    dirty: keepDraft,
    draftEtag: keepDraft ? state.memory.draftEtag : raw.etag,
  });
  setMemoryView(view);
  $('memory-panel').dataset.loaded = 'true';
  $('memory-panel').dataset.loadFailed = 'false';
  // the failure is over: a status line still saying so would be stale
  if (failedLoad !== null && $('memory-status').textContent === failedLoad) setMemoryStatus(loadedText());
  failedLoad = null;
  return true;
}

// -- writing the whole file ---------------------------------------------------------------------

/** PUT the whole file with If-Match `etag` (none: the file did not exist). Throws ApiError. */
export async function putMemoryFile(text, etag) {
  const headers = { 'Content-Type': 'text/plain; charset=utf-8' };
  if (etag) headers['If-Match'] = etag;
  updateMemory({ busy: true });
  try {
    const resp = await api('PUT', filePath(MEMORY_PATH), { body: text, headers, raw: true });
    return resp.headers.get('ETag');
  } finally {
    updateMemory({ busy: false });
  }
}

/**
 * The version a write of ours just made: the newest one, by the user, of that size. Undo uses
 * it; when another writer got in first it is not ours and no Undo is offered.
 */
export async function findOwnNewestVersion(text) {
  try {
    const { versions = [] } = await api('GET', `${MEMORY_API}/versions`);
    const newest = versions[0];
    if (newest && newest.actor === 'user' && Number(newest.size) === byteLength(text)) return newest;
  } catch {
    // no history to offer an Undo from; the write itself succeeded
  }
  return null;
}

// -- the audit trail ------------------------------------------------------------------------------

export async function undoVersion(versionId) {
  return api('POST', versionPath(versionId, '/undo'));
}

export async function restoreVersion(versionId, etag) {
  const headers = etag ? { 'If-Match': etag } : {};
  return api('POST', versionPath(versionId, '/restore'), { headers });
}

/** A unified diff as text lines, each classed by its first character (file headers left out). */
export function diffLines(diff) {
  const lines = String(diff || '').split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  let inHeader = true;
  return lines.filter((line) => {
    if (line.startsWith('@@')) inHeader = false;
    return !(inHeader && (line.startsWith('+++') || line.startsWith('---')));
  }).map((line) => {
    let kind = 'same';
    if (line.startsWith('@@')) kind = 'hunk';
    else if (line.startsWith('+')) kind = 'add';
    else if (line.startsWith('-')) kind = 'del';
    return el('span', { class: `diff-line diff-${kind}`, 'data-diff': kind }, line, '\n');
  });
}
