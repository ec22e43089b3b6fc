// Import… in the memory panel: a file from elsewhere is untrusted, so it is never applied
// blind. Picking one asks the server for a dry run (nothing written) and shows what the memory
// would become: the diff against the current file and what the lint finds (a secret, text that
// talks to the assistant). Only Apply writes it, with If-Match of the file the diff was made
// against, as one "imported a file" version the status line can undo. The file's bytes go to
// the server as they are: it alone decides what is valid (UTF-8, size, our export format).

import { ApiError, api, describe } from './api.js';
import { $, el } from './dom.js';
import { MEMORY_API, diffLines, loadMemory, setMemoryStatus } from './memory_store.js';
import { MEMORY_LINT_TEXT } from './vocabulary.js';

const IMPORT_PATH = `${MEMORY_API}/import`;

let pending = null; // {name, bytes, type, preview}: the previewed file Apply would write
let gen = 0; // a newer pick (or Cancel) makes an older dry run's answer stale

function mediaType(file) {
  const json = file.type === 'application/json' || /\.json$/i.test(file.name);
  return json ? 'application/json' : 'text/markdown; charset=utf-8';
}

async function dryRun(bytes, type) {
  return api('POST', `${IMPORT_PATH}?dry_run=true`, { body: bytes, headers: { 'Content-Type': type } });
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
  $('memory-import-summary').textContent = `“${name}”: ${entries.length} `
    + `${entries.length === 1 ? 'entry' : 'entries'} · ${Number(preview.size) || 0} bytes. `
    + (preview.changed ? 'Nothing is written until you apply it.' : 'It is the same as your memory now.');
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
    preview = await dryRun(bytes, type);
  } catch (err) {
    if (mine !== gen) return;
    hidePreview();
    setMemoryStatus(`Not imported: ${describe(err)}`);
    return;
  }
  if (mine !== gen) return;
  pending = { name, bytes, type, preview };
  renderPreview();
  setMemoryStatus('Review the import above, then Apply or Cancel.');
}

export function onImportClick() {
  $('memory-import-file').click();
}

export async function onImportFilePicked() {
  const input = $('memory-import-file');
  const file = input.files?.[0];
  input.value = ''; // the same file can be picked again
  if (!file) return;
  await previewFile(file.name, await file.arrayBuffer(), mediaType(file));
}

export async function onImportApply() {
  if (!pending) return;
  const { name, bytes, type, preview } = pending;
  const button = $('memory-import-apply');
  button.disabled = true;
  let result;
  try {
    result = await api('POST', IMPORT_PATH, {
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
  setMemoryStatus(`Imported “${name}” · ${Number(result?.size) || 0} bytes.`,
    versionId ? { undo: { versionId, label: 'Import' } } : {});
}

export function onImportCancel() {
  hidePreview();
  setMemoryStatus('Import cancelled; nothing was written.');
}

/** Forget a preview (sign-out, the panel closing): no file of one user stays on the page. */
export function resetImport() {
  hidePreview();
}
