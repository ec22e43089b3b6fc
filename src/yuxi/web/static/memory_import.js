// Import… in the memory panel: a file from elsewhere is untrusted, so it is never applied
// blind. Picking one asks the server for a dry run (nothing written) and shows what the memory
// would become, in words first ("replaces your 3 entries with 4", or with Append "adds 2 new
// entries after your 3"), then the diff against the current file and what the lint finds (a
// secret, text that talks to the assistant). Only Apply writes it, with If-Match of the file the
// diff was made against, as one "imported a file" version. Its receipt on the status line keeps
// its Undo while that import is still the newest change, even after the panel was closed and
// opened again (Versions offers the same Undo on the current version). The file's bytes go to
// the server as they are: it alone decides what is valid (UTF-8, size, our export format).

import { ApiError, api, describe } from './api.js';
import { $, el } from './dom.js';
import { MEMORY_API, diffLines, loadMemory, setMemoryStatus } from './memory_store.js';
import { MEMORY_LINT_TEXT } from './vocabulary.js';

const IMPORT_PATH = `${MEMORY_API}/import`;

let pending = null; // {name, bytes, type, preview}: the previewed file Apply would write
let gen = 0; // a newer pick (or Cancel) makes an older dry run's answer stale
let receipt = null; // {versionId, text}: the last applied import, while it may be undone

function mediaType(file) {
  const json = file.type === 'application/json' || /\.json$/i.test(file.name);
  return json ? 'application/json' : 'text/markdown; charset=utf-8';
}

/** The mode the preview's choice names: `replace` (the default) or `append`. */
function chosenMode() {
  return document.querySelector('input[name="memory-import-mode"]:checked')?.value === 'append'
    ? 'append' : 'replace';
}

async function dryRun(bytes, type, mode) {
  return api('POST', `${IMPORT_PATH}?dry_run=true&mode=${mode}`,
    { body: bytes, headers: { 'Content-Type': type } });
}

function count(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

/** What applying the preview does, in words (the counts are the server's). */
function summaryText(name, preview) {
  const have = Number(preview.current_entries) || 0;
  const theirs = Number(preview.imported_entries) || 0;
  const fresh = Number(preview.new_entries) || 0;
  const size = `${Number(preview.size) || 0} bytes`;
  if (!preview.changed) return `“${name}” would change nothing: your memory already is what it would make.`;
  if (preview.mode === 'append') {
    const known = theirs - fresh;
    return `Adds ${count(fresh, 'new entry', 'new entries')} from “${name}” after your `
      + `${count(have, 'entry', 'entries')}${known ? ` (${known} already in your memory, left out)` : ''}`
      + ` · ${size} in all. Nothing is written until you apply it.`;
  }
  const yours = have ? `replaces your ${count(have, 'entry', 'entries')}` : 'fills your empty memory';
  return `“${name}” ${yours} with its ${count(theirs, 'entry', 'entries')} · ${size}. `
    + (have ? 'Anything not in the file is removed; choose Add to keep yours. ' : '')
    + 'Nothing is written until you apply it.';
}

function findingItem(f, entries) {
  const entry = entries[f.entry_index];
  const where = entry ? ` (line ${entry.start_line})` : '';
  return el('li', { class: `lint-chip lint-${f.code}`, 'data-testid': 'memory-import-finding', 'data-code': f.code },
    `${MEMORY_LINT_TEXT[f.code] || String(f.code)}${where}`, f.message ? `: ${f.message}` : '');
}

function renderPreview() {
  const { name, preview } = pending;
  const entries = preview.entries || [];
  const lint = preview.lint || [];
  const lines = diffLines(preview.diff);
  $('memory-import-summary').textContent = summaryText(name, preview);
  $('memory-import-preview').dataset.mode = preview.mode || 'replace';
  $('memory-import-apply').textContent = preview.mode === 'append'
    ? `Add ${count(Number(preview.new_entries) || 0, 'entry', 'entries')}` : 'Replace my memory';
  $('memory-import-findings').replaceChildren(...lint.map((f) => findingItem(f, entries)));
  $('memory-import-findings-none').hidden = lint.length > 0;
  $('memory-import-findings-title').hidden = lint.length === 0;
  $('memory-import-diff').replaceChildren(...(lines.length
    ? [el('pre', { class: 'diff', 'data-testid': 'memory-import-diff-lines' }, ...lines)]
    : [el('p', { class: 'muted small' }, 'No change in the text.')]));
  $('memory-import-apply').disabled = !preview.changed;
  $('memory-import-preview').hidden = false;
  $('memory-import-preview').dataset.ready = 'true';
}

function hidePreview() {
  pending = null;
  gen += 1;
  $('memory-import-preview').hidden = true;
  $('memory-import-preview').dataset.ready = 'false';
  $('memory-import-summary').textContent = '';
  $('memory-import-findings').replaceChildren();
  $('memory-import-diff').replaceChildren();
}

/** Preview `file`: the server's dry run, shown in the panel. */
async function previewFile(name, bytes, type) {
  const mine = ++gen;
  setMemoryStatus(`Checking “${name}”…`);
  let preview;
  try {
    preview = await dryRun(bytes, type, chosenMode());
  } catch (err) {
    if (mine !== gen) return;
    hidePreview();
    setMemoryStatus(`Not imported: ${describe(err)}`);
    return;
  }
  if (mine !== gen) return;
  pending = { name, bytes, type, preview };
  renderPreview();
  setMemoryStatus('Review the import above, then apply it or cancel.');
}

export function onImportClick() {
  $('memory-import-file').click();
}

export async function onImportFilePicked() {
  const input = $('memory-import-file');
  const file = input.files?.[0];
  input.value = ''; // the same file can be picked again
  if (!file) return;
  $('memory-import-mode-replace').checked = true; // each new file starts from the default
  await previewFile(file.name, await file.arrayBuffer(), mediaType(file));
}

/** Replace ↔ Add: the same file previewed again in the other mode. */
export async function onImportModeChange() {
  if (!pending) return;
  const { name, bytes, type } = pending;
  await previewFile(name, bytes, type);
}

export async function onImportApply() {
  if (!pending) return;
  const { name, bytes, type, preview } = pending;
  const button = $('memory-import-apply');
  button.disabled = true;
  let result;
  try {
    result = await api('POST', `${IMPORT_PATH}?mode=${preview.mode || 'replace'}`, {
      body: bytes, headers: { 'Content-Type': type, 'If-Match': preview.etag },
    });
  } catch (err) {
    button.disabled = false;
    if (err instanceof ApiError && err.status === 412) {
      // The memory changed since the preview: show the diff against what it is now instead.
      await previewFile(name, bytes, type);
      setMemoryStatus('Not imported: the memory changed since the preview. Here is the import against it now.');
    } else {
      setMemoryStatus(`Not imported: ${describe(err)}`);
    }
    return;
  }
  hidePreview();
  await loadMemory();
  const versionId = result?.version?.version_id;
  const what = preview.mode === 'append'
    ? `Added ${count(Number(preview.new_entries) || 0, 'entry', 'entries')} from “${name}”`
    : `Replaced your memory with “${name}”`;
  const text = `${what} · ${Number(result?.size) || 0} bytes now.`;
  receipt = versionId ? { versionId, text } : null;
  setMemoryStatus(text, versionId ? { undo: { versionId, label: 'Import' } } : {});
}

/**
 * The panel opened again: the last import's receipt, with its Undo, while that import is still
 * the newest change (an undo is only possible then; anything newer drops the receipt).
 */
export async function showImportReceipt() {
  if (!receipt) return;
  const mine = receipt;
  let versions;
  try {
    ({ versions = [] } = await api('GET', `${MEMORY_API}/versions`));
  } catch {
    return; // the receipt waits for the next opening
  }
  if (receipt !== mine) return;
  if (versions[0]?.version_id !== mine.versionId) {
    receipt = null;
    return;
  }
  setMemoryStatus(mine.text, { undo: { versionId: mine.versionId, label: 'Import' } });
}

/** Forget the last import's receipt (sign-out). */
export function forgetImportReceipt() {
  receipt = null;
}

export function onImportCancel() {
  hidePreview();
  setMemoryStatus('Import cancelled; nothing was written.');
}

/** Forget a preview (sign-out, the panel closing): no file of one user stays on the page. */
export function resetImport() {
  hidePreview();
}
