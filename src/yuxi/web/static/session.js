// Signing in with an API token, and signing out.

import { api, ApiError, describe, tokenStore } from './api.js';
import { clearError } from './banner.js';
import { $ } from './dom.js';
import { resetMemoryPanel } from './memory_panel.js';
import { stopFollowing } from './run.js';
import { setToken, signedIn, signedOut, state } from './state.js';
import { loadThreads, selectThread, showEmptyConversation } from './threads.js';

export async function signIn(token) {
  const errorLine = $('signin-error');
  errorLine.hidden = true;
  token = token.trim();
  if (!token) {
    errorLine.textContent = 'Enter your API token.';
    errorLine.hidden = false;
    return false;
  }
  $('sign-in').disabled = true;
  setToken(token);
  try {
    const me = await api('GET', '/me');
    const config = await api('GET', '/me/config');
    signedIn(me, config.enable_memory);
  } catch (err) {
    signedOut();
    if (err instanceof ApiError && err.status === 401) tokenStore.remove();
    errorLine.textContent = err instanceof ApiError && err.status === 401
      ? 'That token was not accepted. Check it and try again.'
      : `Could not sign in: ${describe(err)}`;
    errorLine.hidden = false;
    return false;
  } finally {
    $('sign-in').disabled = false;
  }
  tokenStore.set(token);
  $('token-input').value = '';
  $('user-name').textContent = state.me.name;
  $('signin-view').hidden = true;
  $('app-view').hidden = false;
  clearError();
  await loadThreads();
  const wanted = new URLSearchParams(location.hash.slice(1)).get('thread');
  const first = state.threads.find((t) => t.thread_id === wanted) || state.threads[0];
  if (first) await selectThread(first.thread_id);
  else showEmptyConversation();
  $('message-input').focus();
  return true;
}

export function signOut(message) {
  stopFollowing();
  signedOut();
  tokenStore.remove();
  resetMemoryPanel();
  $('thread-list').replaceChildren();
  $('transcript').replaceChildren();
  $('user-name').textContent = '';
  $('app-view').hidden = true;
  $('signin-view').hidden = false;
  history.replaceState(null, '', location.pathname + location.search);
  const errorLine = $('signin-error');
  errorLine.textContent = message || '';
  errorLine.hidden = !message;
  clearError();
  $('token-input').focus();
}

export function sessionExpired() {
  signOut('Your token is no longer valid. Sign in again.');
}
