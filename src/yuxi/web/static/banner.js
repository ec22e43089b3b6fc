// The error banner at the top of the app.

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
