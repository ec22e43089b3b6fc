// On a narrow screen the thread list is a drawer: closed, the transcript has the screen; the
// "Threads" button opens it over the open thread, and choosing a thread (or Escape) closes it.
// On a wide screen the list is always shown and the button is hidden (narrow.css).

import { $ } from './dom.js';

export function drawerOpen() {
  return $('app-view').classList.contains('drawer-open');
}

export function setDrawer(open) {
  $('app-view').classList.toggle('drawer-open', open);
  $('threads-toggle').setAttribute('aria-expanded', open ? 'true' : 'false');
  if (open) $('sidebar').querySelector('[aria-current="true"], button')?.focus();
}

export function toggleDrawer() {
  setDrawer(!drawerOpen());
}

/** Another thread opened (or none): the drawer has done its job. */
export function closeDrawer() {
  if (drawerOpen()) setDrawer(false);
}
