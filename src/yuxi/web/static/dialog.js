// The in-page confirmation dialog (a modal <dialog>, never window.confirm): one question at a
// time, answered by its buttons, Escape or a click outside (both mean "no").

import { $ } from './dom.js';

let pending = null; // the resolve function of the question on screen

function answer(value) {
  const resolve = pending;
  pending = null;
  const dialog = $('confirm-dialog');
  if (dialog.open) dialog.close();
  resolve?.(value);
}

/** Wire the dialog's buttons once (app.js). */
export function wireDialog() {
  const dialog = $('confirm-dialog');
  $('confirm-ok').addEventListener('click', () => answer(true));
  $('confirm-cancel').addEventListener('click', () => answer(false));
  dialog.addEventListener('cancel', (e) => {
    e.preventDefault();
    answer(false);
  });
  dialog.addEventListener('click', (e) => {
    if (e.target === dialog) answer(false); // the backdrop
  });
}

/** Is any in-page modal dialog open (this one, or the Account dialogs)? Escape is theirs then. */
export function dialogOpen() {
  return document.querySelector('dialog[open]') !== null;
}

/**
 * Ask a yes/no question; resolves true only when the user confirms. A new question while one is
 * on screen answers the old one "no". `extra` (optional) is shown under the message.
 */
export function confirmDialog({
  title, message, confirm = 'OK', cancel = 'Cancel', danger = false, extra = null,
}) {
  if (pending) answer(false);
  $('confirm-title').textContent = title;
  $('confirm-message').textContent = message || '';
  $('confirm-message').hidden = !message;
  // `extra`: a node the caller built (text nodes only) and reads back once answered.
  $('confirm-extra').replaceChildren(...(extra ? [extra] : []));
  $('confirm-extra').hidden = !extra;
  const ok = $('confirm-ok');
  ok.textContent = confirm;
  ok.className = danger ? 'danger' : 'primary';
  $('confirm-cancel').textContent = cancel;
  return new Promise((resolve) => {
    pending = resolve;
    $('confirm-dialog').showModal();
    (danger ? $('confirm-cancel') : ok).focus();
  });
}
