// The versions mode of the memory panel: every recorded version of MEMORY.md, newest first, with
// who changed it, how and when; each opens its diff against its parent and can be restored
// (If-Match the current version, so a restore never lands on a file the user has not seen).

import { ApiError, api, describe } from './api.js';
import { confirmDialog } from './dialog.js';
import { $, el, formatTime } from './dom.js';
import {
  MEMORY_API, diffLines, loadMemory, restoreVersion, setMemoryStatus, undoVersion, versionPath,
} from './memory_store.js';
import { state } from './state.js';
import { MEMORY_VERSION_ACTOR_TEXT, MEMORY_VERSION_KIND_TEXT } from './vocabulary.js';

let loadGen = 0; // a newer load makes an older one's answer stale

function describeVersion(v) {
  const who = MEMORY_VERSION_ACTOR_TEXT[v.actor] || String(v.actor || '');
  const what = MEMORY_VERSION_KIND_TEXT[v.kind] || String(v.kind || '');
  return `${who} ${what}`;
}

/** Which thread an agent's version came from: a real title in quotes, else plain words. */
function originLine(v) {
  if (v.actor !== 'agent') return null;
  const gone = v.source_available === false;
  const attrs = {
    class: 'small muted version-origin',
    'data-testid': 'memory-version-origin',
    'data-available': gone ? 'false' : 'true',
  };
  // purged from the trash: the version keeps its text, not the link (design.md §12.3)
  if (!v.thread_id) return el('div', attrs, 'in ', el('span', { class: 'origin-placeholder' }, 'a deleted thread'));
  if (!gone && v.thread_title) return el('div', attrs, `in “${v.thread_title}”`);
  return el('div', attrs, 'in ', el('span', { class: 'origin-placeholder' },
    gone ? 'a thread no longer available' : 'a thread'));
}

function versionItem(v, isCurrent) {
  const diffButton = el('button', {
    type: 'button', class: 'ghost small', 'data-testid': 'memory-version-show', 'aria-expanded': 'false',
  }, 'Changes');
  const restore = isCurrent ? null : el('button', {
    type: 'button', class: 'small', 'data-testid': 'memory-version-restore',
  }, 'Restore');
  // The newest change can be undone from here too (the server undoes only while the file is
  // still that version's result), so an Undo is never lost with a status line.
  const undo = isCurrent ? el('button', {
    type: 'button', class: 'small', 'data-testid': 'memory-version-undo',
  }, 'Undo') : null;
  const detail = el('div', { class: 'version-detail', 'data-testid': 'memory-version-detail', hidden: true });
  const item = el('li', {
    class: 'memory-version',
    'data-testid': 'memory-version',
    'data-version-id': v.version_id,
    'data-kind': v.kind,
    'data-actor': v.actor,
    'data-current': isCurrent ? 'true' : 'false',
  },
  el('div', { class: 'version-head' },
    el('div', { class: 'version-what' },
      el('strong', { 'data-testid': 'memory-version-what' }, describeVersion(v)),
      isCurrent ? el('span', { class: 'badge', 'data-testid': 'memory-version-current' }, 'current') : null,
      el('div', { class: 'small muted' },
        el('time', { datetime: v.created_at }, formatTime(v.created_at)), ` · ${Number(v.size) || 0} bytes`),
      originLine(v)),
    el('span', { class: 'spacer' }),
    diffButton,
    restore,
    undo),
  detail);
  diffButton.addEventListener('click', () => toggleDiff(v, diffButton, detail));
  restore?.addEventListener('click', () => onRestore(v, restore));
  undo?.addEventListener('click', () => onUndo(v, undo));
  return item;
}

async function toggleDiff(v, button, detail) {
  if (!detail.hidden) {
    detail.hidden = true;
    button.setAttribute('aria-expanded', 'false');
    return;
  }
  button.setAttribute('aria-expanded', 'true');
  detail.hidden = false;
  detail.replaceChildren(el('p', { class: 'muted small' }, 'Loading…'));
  try {
    const full = await api('GET', versionPath(v.version_id));
    const lines = diffLines(full.diff);
    detail.replaceChildren(lines.length
      ? el('pre', { class: 'diff', 'data-testid': 'memory-version-diff' }, ...lines)
      : el('p', { class: 'muted small', 'data-testid': 'memory-version-diff' }, 'No change in the text.'));
  } catch (err) {
    detail.replaceChildren(el('p', { class: 'form-error small' }, `Could not load it: ${describe(err)}`));
  }
}

async function onRestore(v, button) {
  const ok = await confirmDialog({
    title: 'Restore this version?',
    message: `MEMORY.md becomes what it was on ${formatTime(v.created_at)} (${Number(v.size) || 0} `
      + 'bytes). The change is recorded and can be undone.',
    confirm: 'Restore',
  });
  if (!ok) return;
  button.disabled = true;
  let result;
  try {
    result = await restoreVersion(v.version_id, state.memoryView?.etag || state.memory.etag);
  } catch (err) {
    button.disabled = false;
    if (err instanceof ApiError && err.status === 412) {
      await loadMemory(); // the versions follow (memory_panel.followMemoryView)
      setMemoryStatus('Not restored: the memory changed since you loaded it. Look at it again, then restore.');
    } else {
      setMemoryStatus(`Not restored: ${describe(err)}`);
    }
    return;
  }
  await loadMemory();
  const made = result?.version?.version_id || result?.version_id;
  setMemoryStatus(`Restored the version of ${formatTime(v.created_at)}.`,
    made ? { undo: { versionId: made, label: 'Restore' } } : {});
}

async function onUndo(v, button) {
  const ok = await confirmDialog({
    title: 'Undo this change?',
    message: `“${describeVersion(v)}” (${formatTime(v.created_at)}) is reverted: MEMORY.md becomes `
      + 'what it was before it. The undo is recorded too.',
    confirm: 'Undo',
  });
  if (!ok) return;
  button.disabled = true;
  try {
    await undoVersion(v.version_id);
  } catch (err) {
    button.disabled = false;
    setMemoryStatus(err instanceof ApiError && err.status === 409
      ? 'Not undone: the memory changed since, or what came before is no longer kept. Restore an older version instead.'
      : `Not undone: ${describe(err)}`);
    await loadMemory();
    return;
  }
  await loadMemory(); // the versions follow (memory_panel.followMemoryView)
  setMemoryStatus(`Undone: ${describeVersion(v).toLowerCase()}.`);
}

/** (Re)load the list of versions into the versions view. */
export async function loadVersions() {
  const gen = ++loadGen;
  const list = $('memory-versions');
  list.dataset.loaded = 'false';
  let versions;
  try {
    ({ versions = [] } = await api('GET', `${MEMORY_API}/versions`));
  } catch (err) {
    if (gen !== loadGen) return;
    list.replaceChildren();
    setMemoryStatus(`Could not load the versions: ${describe(err)}`);
    return;
  }
  if (gen !== loadGen) return;
  list.replaceChildren(...versions.map((v, i) => versionItem(v, i === 0)));
  $('memory-versions-empty').hidden = versions.length > 0;
  list.dataset.loaded = 'true';
}

export function resetVersions() {
  loadGen += 1;
  $('memory-versions').replaceChildren();
  $('memory-versions').dataset.loaded = 'false';
  $('memory-versions-empty').hidden = true;
}
