// The read-only workspace file browser: the user's files (GET /workspace/files) with their sizes;
// a click shows one file's text (GET /workspace/files/{path}) as text, never as HTML. It shares
// the side panel's place with the Memory panel: one of the two is open at a time.

import { api, ApiError, describe, filePath } from './api.js';
import { $, el, formatBytes, formatTime } from './dom.js';
import { closeMemoryPanel } from './memory_panel.js';

let shown = null; // the path of the file on view
let loadGen = 0; // a newer load makes an older answer stale

function setStatus(text) {
  $('files-status').textContent = text;
}

function fileRow(file) {
  return el('li', {},
    el('button', {
      type: 'button',
      class: 'file-item',
      'data-testid': 'file-item',
      'data-path': file.path,
      'aria-current': file.path === shown ? 'true' : null,
      title: file.path,
      onclick: () => showFile(file.path, file.size),
    },
    el('code', { class: 'file-path', 'data-testid': 'file-path' }, file.path),
    el('span', { class: 'file-meta muted small' },
      el('span', { 'data-testid': 'file-size' }, formatBytes(file.size)),
      ' · ',
      el('time', {}, formatTime(new Date(file.mtime * 1000).toISOString())))));
}

/** (Re)load the list; the file on view stays open when it still exists. */
export async function loadFiles() {
  const gen = ++loadGen;
  setStatus('Loading…');
  let body;
  try {
    body = await api('GET', '/workspace/files');
  } catch (err) {
    if (gen !== loadGen) return;
    if (!(err instanceof ApiError && err.status === 401)) setStatus(`Could not list your files: ${describe(err)}`);
    return;
  }
  if (gen !== loadGen) return;
  const files = (body.files || []).filter((f) => !f.is_dir)
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  $('files-list').replaceChildren(...files.map(fileRow));
  $('files-empty').hidden = files.length > 0;
  setStatus(files.length === 1 ? '1 file' : `${files.length} files`);
  const still = files.find((f) => f.path === shown);
  if (shown && still) await showFile(still.path, still.size);
  else if (shown) closeFile();
}

function closeFile() {
  shown = null;
  $('file-view').hidden = true;
  $('file-view-text').textContent = '';
}

async function showFile(path, size) {
  shown = path;
  const gen = ++loadGen;
  for (const item of $('files-list').querySelectorAll('[data-testid="file-item"]')) {
    item.setAttribute('aria-current', item.dataset.path === path ? 'true' : 'false');
  }
  $('file-view').hidden = false;
  $('file-view-path').textContent = path;
  $('file-view-size').textContent = formatBytes(size);
  $('file-view-text').textContent = 'Loading…';
  $('file-view').dataset.loaded = 'false';
  try {
    const resp = await api('GET', filePath(path), { raw: true });
    const text = await resp.text();
    if (gen !== loadGen) return;
    $('file-view-text').textContent = text; // text only: a file is never parsed as HTML
    $('file-view').dataset.loaded = 'true';
  } catch (err) {
    if (gen !== loadGen) return;
    $('file-view-text').textContent = '';
    setStatus(`Could not read ${path}: ${describe(err)}`);
  }
}

export async function openFilesPanel() {
  if (!(await closeMemoryPanel())) return;
  $('files-panel').hidden = false;
  $('files-panel-button').setAttribute('aria-expanded', 'true');
  $('app-view').classList.add('with-panel');
  await loadFiles();
}

export function closeFilesPanel() {
  if ($('files-panel').hidden) return;
  loadGen += 1;
  closeFile();
  $('files-panel').hidden = true;
  $('files-panel-button').setAttribute('aria-expanded', 'false');
  if ($('memory-panel').hidden) $('app-view').classList.remove('with-panel');
}

export function toggleFilesPanel() {
  if ($('files-panel').hidden) openFilesPanel();
  else closeFilesPanel();
}

/** A run ended (it may have written files): an open panel shows the list as it is now. */
export function refreshFilesPanel() {
  if (!$('files-panel').hidden) loadFiles();
}

/** Signed out: nothing of the old user's files stays on the page. */
export function resetFilesPanel() {
  closeFilesPanel();
  $('files-list').replaceChildren();
  setStatus('');
}
