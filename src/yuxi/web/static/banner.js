// The two lines above the app: the error banner, and the notice (what just happened, e.g. lines
// forgotten with a deleted thread, with its one action such as Undo; it goes away on its own).
// Both take their own row in the page's layout (app.css), so they never cover a control.

import { $ } from './dom.js';
import { state } from './state.js';

export function showError(message) {
  if (!state.me) return; // signed out: the sign-in form shows its own errors
  $('banner-text').textContent = message;
  $('banner').hidden = false;
}

export function clearError() {
  $('banner').hidden = true;
  $('banner-text').textContent = '';
}

/** How long a notice stays on screen; it waits while the pointer or the focus is on it. */
export const NOTICE_MS = 12000;

let notice = { owner: null, action: null, timer: null };

function armNoticeTimer() {
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => {
    const box = $('notice');
    if (box.matches(':hover') || box.contains(document.activeElement)) armNoticeTimer();
    else clearNotice();
  }, NOTICE_MS);
}

/**
 * Show `text` in the notice line, replacing what it showed. `action` ({label, run}) adds one
 * button; `owner` names who showed it, so that only they replace or clear it later.
 */
export function showNotice(text, { action = null, owner = null } = {}) {
  if (!state.me) return;
  notice = { ...notice, owner, action };
  $('notice-text').textContent = text;
  const button = $('notice-action');
  button.textContent = action?.label || '';
  button.hidden = !action;
  button.disabled = false;
  $('notice').hidden = false;
  armNoticeTimer();
}

/** The owner of the notice on screen (null: none, or nobody's). */
export function noticeOwner() {
  return $('notice').hidden ? null : notice.owner;
}

/** Hide the notice (only when `owner`'s, if given). */
export function clearNotice(owner = undefined) {
  if (owner !== undefined && noticeOwner() !== owner) return;
  clearTimeout(notice.timer);
  notice = { owner: null, action: null, timer: null };
  $('notice').hidden = true;
  $('notice-text').textContent = '';
  $('notice-action').hidden = true;
}

/** The notice's button: run its action once (the action usually shows what came of it). */
export async function onNoticeAction() {
  const { action } = notice;
  if (!action) return;
  $('notice-action').disabled = true;
  try {
    await action.run();
  } finally {
    $('notice-action').disabled = false;
  }
}
