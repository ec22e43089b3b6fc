// The memory switch (/me/config) and the MEMORY.md panel (ETag / If-Match conflicts).

import { api, ApiError, describe, filePath } from './api.js';
import { showError } from './banner.js';
import { $, byteLength } from './dom.js';
import { setEnableMemory, state, updateMemory } from './state.js';
import { MEMORY_PATH } from './vocabulary.js';

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

/** Reflect `state.memory` (busy, dirty) in the panel. */
export function renderMemoryPanel() {
  const { busy, dirty } = state.memory;
  for (const id of ['memory-save', 'memory-clear', 'memory-reload', 'memory-conflict-reload']) {
    $(id).disabled = busy;
  }
  $('memory-panel').dataset.busy = busy ? 'true' : 'false';
  $('memory-panel').dataset.dirty = dirty ? 'true' : 'false';
}

function setMemoryStatus(text) {
  $('memory-status').textContent = text;
}

export function openMemoryPanel() {
  $('memory-panel').hidden = false;
  $('memory-panel-button').setAttribute('aria-expanded', 'true');
  $('app-view').classList.add('with-panel');
  loadMemory().then(() => $('memory-text').focus());
}

export function closeMemoryPanel() {
  $('memory-panel').hidden = true;
  $('memory-panel-button').setAttribute('aria-expanded', 'false');
  $('app-view').classList.remove('with-panel');
}

export function toggleMemoryPanel() {
  if ($('memory-panel').hidden) openMemoryPanel();
  else closeMemoryPanel();
}

/** Forget the panel's contents (sign-out). */
export function resetMemoryPanel() {
  closeMemoryPanel();
  $('memory-text').value = '';
}

export async function loadMemory() {
  updateMemory({ busy: true });
  $('memory-panel').dataset.loaded = 'false';
  try {
    const resp = await api('GET', filePath(MEMORY_PATH), { raw: true });
    const text = await resp.text();
    $('memory-text').value = text;
    updateMemory({ etag: resp.headers.get('ETag') });
    setMemoryStatus(text ? `Loaded · ${byteLength(text)} bytes` : 'Loaded · the file is empty');
  } catch (err) {
    if (err instanceof ApiError && (err.code === 'file_not_found' || err.status === 404)) {
      $('memory-text').value = '';
      updateMemory({ etag: null });
      setMemoryStatus('No memory file yet.');
    } else {
      setMemoryStatus(`Could not load: ${describe(err)}`);
      return;
    }
  } finally {
    updateMemory({ busy: false });
  }
  updateMemory({ dirty: false, loaded: true });
  $('memory-conflict').hidden = true;
  $('memory-panel').dataset.loaded = 'true';
}

async function writeMemory(text, doneMessage) {
  updateMemory({ busy: true });
  $('memory-conflict').hidden = true;
  const headers = { 'Content-Type': 'text/plain; charset=utf-8' };
  if (state.memory.etag) headers['If-Match'] = state.memory.etag;
  try {
    const resp = await api('PUT', filePath(MEMORY_PATH), { body: text, headers, raw: true });
    updateMemory({ etag: resp.headers.get('ETag') || state.memory.etag, dirty: false });
    $('memory-text').value = text;
    setMemoryStatus(doneMessage);
  } catch (err) {
    if (err instanceof ApiError && err.status === 412) {
      $('memory-conflict').hidden = false;
      setMemoryStatus('Not saved (conflict).');
    } else {
      setMemoryStatus(`Not saved: ${describe(err)}`);
    }
  } finally {
    updateMemory({ busy: false });
  }
}

export function onMemorySave() {
  const text = $('memory-text').value;
  writeMemory(text, `Saved · ${byteLength(text)} bytes`);
}

export function onMemoryClear() {
  writeMemory('', 'Cleared · the file is now empty');
}

export function onMemoryEdited() {
  updateMemory({ dirty: true });
}

/** The assistant remembered something: refresh the open panel unless the user is editing. */
export function memoryChangedOnServer() {
  if ($('memory-panel').hidden || state.memory.busy) return;
  if (state.memory.dirty) {
    setMemoryStatus('The assistant updated MEMORY.md. Reload to see it (your edits would be replaced).');
  } else {
    loadMemory();
  }
}
