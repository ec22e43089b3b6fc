// The raw-file mode of the memory panel: the textarea with its dirty indicator, Save and Clear
// (confirmed, then undoable), and the conflict view a refused save (412) opens, which keeps the
// user's text beside the current file so nothing typed is lost.

import { ApiError, describe } from './api.js';
import { confirmDialog } from './dialog.js';
import { $, byteLength } from './dom.js';
import {
  fetchRawMemory, findOwnNewestVersion, loadMemory, putMemoryFile, sameEtag, setMemoryStatus,
} from './memory_store.js';
import { state, updateMemory } from './state.js';

/** Reflect `state.memory` in the raw editor: busy buttons, the dirty badge, a clean draft. */
export function renderRawEditor() {
  const { busy, dirty, text } = state.memory;
  for (const id of ['memory-save', 'memory-clear', 'memory-reload']) $(id).disabled = busy;
  for (const button of $('memory-conflict').querySelectorAll('button')) button.disabled = busy;
  $('memory-panel').dataset.busy = busy ? 'true' : 'false';
  $('memory-panel').dataset.dirty = dirty ? 'true' : 'false';
  $('memory-dirty').hidden = !dirty;
  const area = $('memory-text');
  if (!dirty && area.value !== text) area.value = text;
}

/** Typing makes the draft dirty; typing it back to the file it was based on makes it clean. */
export function onRawInput() {
  const { text, etag, draftEtag } = state.memory;
  const based = sameEtag(etag, draftEtag) || (!etag && !draftEtag);
  updateMemory({ dirty: !based || $('memory-text').value !== text });
}

/** Forget the raw draft (the file as last loaded comes back into the box). */
export function discardDraft() {
  updateMemory({ dirty: false, draftEtag: state.memory.etag });
  $('memory-text').value = state.memory.text;
  hideConflict();
}

/** After a write of ours: reload, then say so, with an Undo of that write when we can find it. */
export async function afterOwnWrite(text, message, undoLabel) {
  await loadMemory();
  const version = await findOwnNewestVersion(text);
  setMemoryStatus(message, version ? { undo: { versionId: version.version_id, label: undoLabel } } : {});
}

/**
 * Write `text` as the whole file, based on `etag`. On 412 the conflict view opens with `text` as
 * "yours"; returns whether it was written. `fromDraft`: `text` is the raw editor's draft, which is
 * then clean; otherwise (an entry's edit) a dirty draft stays as it is, based on its old version.
 */
export async function saveWholeFile(text, etag, { message, undoLabel, fromDraft = false }) {
  hideConflict();
  try {
    const newEtag = await putMemoryFile(text, etag);
    const patch = { text, etag: newEtag };
    if (fromDraft || !state.memory.dirty) Object.assign(patch, { draftEtag: newEtag, dirty: false });
    updateMemory(patch);
  } catch (err) {
    if (err instanceof ApiError && err.status === 412) {
      await showConflict(text, { fromDraft });
    } else {
      setMemoryStatus(`Not saved: ${describe(err)}`);
    }
    return false;
  }
  await afterOwnWrite(text, message, undoLabel);
  return true;
}

export function onRawSave() {
  const text = $('memory-text').value;
  return saveWholeFile(text, state.memory.draftEtag, {
    message: `Saved · ${byteLength(text)} bytes.`,
    undoLabel: 'Save',
    fromDraft: true,
  });
}

export async function onClear() {
  const lost = state.memory.dirty ? ' Your unsaved edits in the raw editor are discarded too.' : '';
  const ok = await confirmDialog({
    title: 'Clear your memory?',
    message: 'This empties MEMORY.md: the assistant will no longer know any of it. You can undo '
      + `this right after, or restore it later from Versions.${lost}`,
    confirm: 'Clear memory',
    danger: true,
  });
  if (!ok) return;
  hideConflict();
  try {
    await putMemoryFile('', state.memory.etag);
  } catch (err) {
    if (err instanceof ApiError && err.status === 412) {
      await loadMemory();
      setMemoryStatus('Not cleared: the memory changed since you loaded it. Look at it again, then clear.');
    } else {
      setMemoryStatus(`Not cleared: ${describe(err)}`);
    }
    return;
  }
  updateMemory({ text: '', dirty: false });
  await afterOwnWrite('', 'Cleared · the file is now empty.', 'Clear');
}

// -- the conflict view ----------------------------------------------------------------------------

let conflict = null; // {mine, theirs, etag, fromDraft}

export function hideConflict() {
  conflict = null;
  $('memory-conflict').hidden = true;
  $('memory-conflict-mine').value = '';
  $('memory-conflict-theirs').value = '';
}

/** A save was refused: show `mine` beside the file as it is now. */
export async function showConflict(mine, { fromDraft = false } = {}) {
  let current = { text: '', etag: null };
  try {
    current = await fetchRawMemory();
  } catch (err) {
    setMemoryStatus(`Could not load the current file: ${describe(err)}`);
  }
  conflict = { mine, theirs: current.text, etag: current.etag, fromDraft };
  $('memory-conflict-mine').value = mine;
  $('memory-conflict-theirs').value = current.text;
  $('memory-conflict').hidden = false;
  setMemoryStatus('Not saved: MEMORY.md changed since you loaded it. Your text is kept below.');
  $('memory-conflict').scrollIntoView({ block: 'nearest' });
}

/** Keep mine: write my text over the current file (deliberately; the write is undoable). */
export async function onConflictKeepMine() {
  if (!conflict) return;
  const { mine, etag, fromDraft } = conflict;
  await saveWholeFile(mine, etag, {
    message: `Saved your version · ${byteLength(mine)} bytes.`,
    undoLabel: 'Save',
    fromDraft,
  });
}

/** Copy mine to the clipboard (falling back to selecting it for a manual copy). */
export async function onConflictCopyMine() {
  if (!conflict) return;
  const box = $('memory-conflict-mine');
  try {
    await navigator.clipboard.writeText(conflict.mine);
    setMemoryStatus('Your text is on the clipboard.');
  } catch {
    box.focus();
    box.select();
    setMemoryStatus('Your text is selected: copy it with Ctrl+C / ⌘C.');
  }
}
