// The Account dialog (the topbar's "Account"): export everything the user owns as one zip
// (GET /me/export, fetched with the Bearer header and saved through an object URL) and delete the
// account (DELETE /me with {"confirm": name}) after a second dialog in which the user types the
// account's name; its Delete button stays disabled until the name matches exactly. A deletion
// signs out as Sign out does and says so on the sign-in screen. Names and server messages reach
// the page only as text.

import { api, describe } from './api.js';
import { $, el, formatBytes } from './dom.js';
import { state } from './state.js';

const REVOKE_AFTER_MS = 1000; // the download has started by then; the blob is let go

let signOutAfterDelete = () => {};
let exportGen = 0; // a sign-out (or a newer export) makes an older export's answer stale
let deleting = false;


/** `yuxi-account-<name>.zip`, with what a file name cannot hold replaced by `-`. */
export function exportFileName(name) {
  const safe = String(name ?? '')
    .replace(/[\u0000-\u001f\u007f\\/:*?"<>|\s]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '');
  return `yuxi-account-${safe || 'export'}.zip`;
}

function setExportStatus(text, failed = false) {
  const line = $('account-export-status');
  line.textContent = text;
  line.classList.toggle('form-error', failed);
  line.classList.toggle('muted', !failed);
}

// -- the account dialog ---------------------------------------------------------------------------

function showAccount() {
  $('account-name').textContent = state.me.name;
  $('account-uid').textContent = state.me.uid;
  $('account-button').setAttribute('aria-expanded', 'true');
  if (!$('account-dialog').open) $('account-dialog').showModal();
}

export function openAccount() {
  if (!state.me) return;
  showAccount();
  $('account-export').focus();
}

export function closeAccount() {
  hideDelete();
  const dialog = $('account-dialog');
  if (dialog.open) dialog.close();
}

/** The dialog closed (its ×, Escape, a click outside, or a sign-out). */
function accountClosed() {
  $('account-button').setAttribute('aria-expanded', 'false');
}

// -- export -----------------------------------------------------------------------------------------

function saveBlob(blob, fileName) {
  const url = URL.createObjectURL(blob);
  // Inside the (modal) dialog: the rest of the page is inert while it is open.
  const link = el('a', { href: url, download: fileName, hidden: true });
  $('account-dialog').append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), REVOKE_AFTER_MS);
}

export async function onExport() {
  if (!state.me) return;
  const mine = ++exportGen;
  const fileName = exportFileName(state.me.name);
  const button = $('account-export');
  button.disabled = true;
  setExportStatus('Preparing your export… The server gathers everything first; a large account takes a while.');
  let blob;
  try {
    const resp = await api('GET', '/me/export', { raw: true });
    blob = await resp.blob();
  } catch (err) {
    if (mine !== exportGen) return;
    setExportStatus(`Export failed: ${describe(err)}`, true);
    return;
  } finally {
    if (mine === exportGen) button.disabled = false;
  }
  if (mine !== exportGen) return; // signed out meanwhile: nothing of that account is saved
  saveBlob(blob, fileName);
  setExportStatus(`Downloaded ${fileName} · ${formatBytes(blob.size)}.`);
}

// -- delete -----------------------------------------------------------------------------------------

function typedNameMatches() {
  return Boolean(state.me) && $('account-delete-input').value === state.me.name;
}

function showDeleteError(message) {
  const line = $('account-delete-error');
  line.textContent = message;
  line.hidden = !message;
}

function setDeleting(busy) {
  deleting = busy;
  $('account-delete-input').disabled = busy;
  $('account-delete-cancel').disabled = busy;
  $('account-delete-confirm').disabled = busy || !typedNameMatches();
  $('account-delete-confirm').textContent = busy ? 'Deleting…' : 'Delete account';
}

/** The question takes the account dialog's place (one dialog on screen at a time). */
export function openDelete() {
  if (!state.me) return;
  for (const node of document.querySelectorAll('[data-account-name]')) {
    node.textContent = state.me.name;
  }
  $('account-delete-input').value = '';
  showDeleteError('');
  setDeleting(false);
  if ($('account-dialog').open) $('account-dialog').close();
  $('account-button').setAttribute('aria-expanded', 'true');
  $('account-delete-dialog').showModal();
  $('account-delete-input').focus();
}

/** Close the question, typed name and all; false while the deletion is under way. */
function hideDelete() {
  if (deleting) return false;
  const dialog = $('account-delete-dialog');
  if (dialog.open) dialog.close();
  $('account-delete-input').value = '';
  showDeleteError('');
  return true;
}

/** Cancel or Escape: nothing deleted, back to the account dialog. */
export function cancelDelete() {
  if (!hideDelete() || !state.me) return;
  showAccount();
  $('account-delete').focus();
}

/** Typed the name but not exactly (capitals or spaces differ): say so, since the server takes
 * only the exact name and a disabled button alone does not tell why. */
function nearlyTheName() {
  const typed = $('account-delete-input').value;
  return Boolean(state.me) && typed !== state.me.name
    && typed.trim().toLowerCase() === state.me.name.toLowerCase();
}

export function onDeleteInput() {
  showDeleteError(nearlyTheName()
    ? 'Not quite: type the name exactly as shown (capitals and spaces count).' : '');
  $('account-delete-confirm').disabled = deleting || !typedNameMatches();
}

export async function onDeleteSubmit(event) {
  event.preventDefault();
  if (deleting || !typedNameMatches()) return;
  const name = state.me.name;
  setDeleting(true);
  try {
    await api('DELETE', '/me', { json: { confirm: $('account-delete-input').value } });
  } catch (err) {
    setDeleting(false);
    if (state.me) {
      showDeleteError(`Not deleted: ${describe(err)}`);
      $('account-delete-input').focus();
    }
    return;
  }
  deleting = false;
  closeAccount();
  signOutAfterDelete(name);
}

/** Wire both dialogs' own events once, and what to do once the account is gone (app.js
 * passes session.js's sign-out). */
export function wireAccount({ deleted }) {
  signOutAfterDelete = deleted;
  const dialog = $('account-dialog');
  dialog.addEventListener('close', accountClosed);
  dialog.addEventListener('click', (e) => {
    if (e.target === dialog) closeAccount(); // the backdrop (the dialog itself has no padding)
  });
  const confirm = $('account-delete-dialog');
  confirm.addEventListener('cancel', (e) => {
    e.preventDefault(); // Escape: our own close, which a running deletion refuses
    cancelDelete();
  });
}

/** Signed out: the dialogs close and nothing of the old account stays on the page. */
export function resetAccount() {
  exportGen += 1;
  deleting = false;
  closeAccount();
  $('account-export').disabled = false;
  setExportStatus('');
  $('account-name').textContent = '';
  $('account-uid').textContent = '';
  for (const node of document.querySelectorAll('[data-account-name]')) node.textContent = '';
}
