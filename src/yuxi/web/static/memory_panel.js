// The memory switch (/me/config) and the memory panel around its three modes: opening and
// closing it (never losing unsaved edits silently), switching modes, reloading, and following
// changes the assistant makes. The modes live in memory_entries, memory_editor, memory_versions.

import { api, describe } from './api.js';
import { showError } from './banner.js';
import { confirmDialog } from './dialog.js';
import { $ } from './dom.js';
import { dropEntryDraft, hasEntryDraft, highlightEntry } from './memory_entries.js';
import { discardDraft, hideConflict } from './memory_editor.js';
import { forgetImportReceipt, resetImport, showImportReceipt } from './memory_import.js';
import { loadVersions, resetVersions } from './memory_versions.js';
import {
  loadMemory, loadedText, memoryLoadFailed, memoryStatusInPanel, setMemoryStatus,
} from './memory_store.js';
import { setEnableMemory, setMemoryMode, setMemoryView, state, updateMemory } from './state.js';

// -- the switch ---------------------------------------------------------------------------------

export function renderMemorySwitch() {
  const toggle = $('memory-toggle');
  toggle.checked = state.enableMemory;
  toggle.setAttribute('aria-checked', String(state.enableMemory));
  $('memory-state').textContent = state.enableMemory ? 'on' : 'off';
  $('memory-off-note').hidden = state.enableMemory;
}

export async function onMemoryToggle() {
  const toggle = $('memory-toggle');
  const wanted = toggle.checked;
  toggle.disabled = true;
  toggle.dataset.saving = 'true';
  try {
    const config = await api('PUT', '/me/config', { json: { enable_memory: wanted } });
    setEnableMemory(config.enable_memory);
  } catch (err) {
    showError(`Could not change the memory switch: ${describe(err)}`);
  } finally {
    toggle.disabled = false;
    delete toggle.dataset.saving;
    renderMemorySwitch();
  }
}

// -- the panel ----------------------------------------------------------------------------------

const MODES = ['entries', 'raw', 'versions'];

/** Show the mode `state.memoryMode`: its tab selected, its view visible. */
export function renderMemoryMode() {
  const mode = state.memoryMode;
  for (const m of MODES) {
    const tab = $(`memory-tab-${m}`);
    tab.setAttribute('aria-selected', String(m === mode));
    tab.tabIndex = m === mode ? 0 : -1;
    $(`memory-${m}-view`).hidden = m !== mode;
  }
  $('memory-save').hidden = mode !== 'raw';
  $('memory-panel').dataset.mode = mode;
}

export function selectMemoryMode(mode) {
  if (!MODES.includes(mode)) return;
  setMemoryMode(mode);
  if (mode === 'versions' && !$('memory-panel').hidden) loadVersions();
  if (mode === 'raw') $('memory-text').focus();
}

/** Every new load of the file also refreshes the open versions list (app.js subscribes it). */
export function followMemoryView() {
  if (state.memoryView && state.memoryMode === 'versions' && !$('memory-panel').hidden) loadVersions();
}

/** Arrow keys move between the tabs (the tablist pattern). */
export function onMemoryTabKey(event) {
  const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
  if (!step) return;
  event.preventDefault();
  const next = MODES[(MODES.indexOf(state.memoryMode) + step + MODES.length) % MODES.length];
  selectMemoryMode(next);
  $(`memory-tab-${next}`).focus();
}

function hasUnsavedEdits() {
  return state.memory.dirty || hasEntryDraft();
}

/** Unsaved edits go only when the user says so. Resolves whether they may go. */
async function mayDiscardEdits(action) {
  if (!hasUnsavedEdits()) return true;
  const ok = await confirmDialog({
    title: 'Discard your unsaved edits?',
    message: `You have edited MEMORY.md without saving. ${action} throws those edits away.`,
    confirm: 'Discard edits',
    cancel: 'Keep editing',
    danger: true,
  });
  if (ok) {
    discardDraft();
    dropEntryDraft();
  }
  return ok;
}

let hooks = { opening: () => {} };

/** `opening()` runs before the panel opens (the Files panel, sharing its place, closes). */
export function wireMemoryPanel({ opening }) {
  hooks = { opening };
}

export async function openMemoryPanel() {
  hooks.opening();
  $('memory-panel').hidden = false;
  $('memory-panel-button').setAttribute('aria-expanded', 'true');
  $('app-view').classList.add('with-panel');
  memoryStatusInPanel();
  const loaded = await loadMemory();
  if (loaded && !$('memory-status').textContent) setMemoryStatus(loadedText());
  if (loaded) await showImportReceipt(); // an import's Undo outlives the panel being closed
  return loaded;
}

/**
 * The app has just heard from the server (a run settled): an open panel whose last load failed
 * loads again, so it does not go on saying it could not load.
 */
export async function retryFailedMemoryLoad() {
  if ($('memory-panel').hidden || state.memory.busy || !memoryLoadFailed() || hasUnsavedEdits()) return;
  await loadMemory();
}

/** Close the panel; with unsaved edits, only once the user agrees to lose them. */
export async function closeMemoryPanel() {
  if ($('memory-panel').hidden) return true;
  if (!(await mayDiscardEdits('Closing the panel'))) return false;
  hideConflict();
  resetImport(); // a preview not applied goes with the panel
  resetVersions(); // reopened, it shows the versions as they are then, never a stale list
  $('memory-panel').hidden = true;
  $('memory-panel-button').setAttribute('aria-expanded', 'false');
  $('app-view').classList.remove('with-panel');
  setMemoryStatus('');
  return true;
}

export function toggleMemoryPanel() {
  if ($('memory-panel').hidden) openMemoryPanel();
  else closeMemoryPanel();
}

/** The conflict view's "Take theirs": drop my text (draft and entry edit), load the current file. */
export async function onConflictTakeTheirs() {
  hideConflict();
  dropEntryDraft();
  await loadMemory({ discardDraft: true });
  setMemoryStatus('Loaded the current version; your text was discarded.');
}

export async function onMemoryReload() {
  if (!(await mayDiscardEdits('Reloading'))) return;
  hideConflict();
  if (await loadMemory({ discardDraft: true })) setMemoryStatus('Reloaded.');
}

/** Forget the panel's contents (sign-out): nothing of one user's memory stays on the page. */
export function resetMemoryPanel() {
  $('memory-panel').hidden = true;
  $('memory-panel-button').setAttribute('aria-expanded', 'false');
  $('app-view').classList.remove('with-panel');
  dropEntryDraft();
  hideConflict();
  resetImport();
  forgetImportReceipt();
  updateMemory({ dirty: false, text: '', etag: null, draftEtag: null });
  setMemoryView(null);
  resetVersions();
  $('memory-text').value = '';
  $('memory-filter').value = '';
  setMemoryStatus('');
}

/** Open the panel on the entry a write receipt points at. */
export async function showMemoryEntry({ versionId = null, text = '' } = {}) {
  if ($('memory-panel').hidden) {
    if (!(await openMemoryPanel())) return;
  } else if (!hasUnsavedEdits()) {
    await loadMemory();
  }
  setMemoryMode('entries');
  if (!highlightEntry({ versionId, text })) {
    setMemoryStatus('That text is no longer in your memory.');
  }
}

/** The assistant or an undo changed MEMORY.md: refresh the open panel unless the user is editing. */
export async function memoryChangedOnServer() {
  if ($('memory-panel').hidden || state.memory.busy) return;
  if (hasUnsavedEdits()) {
    setMemoryStatus('MEMORY.md changed meanwhile. Your unsaved edits are kept; saving them will show both versions.');
    return;
  }
  await loadMemory();
}
