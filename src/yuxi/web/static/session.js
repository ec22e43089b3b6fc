// Signing in (with an API token, or with the single-use login code of a login link) and out.
//
// A credential never stays in the address bar: a login link carries a short-lived, single-use
// code (`?login=…`) that is removed from the URL at once and exchanged (POST /session) for an
// expiring session token. A token in a URL (`?token=…`, old links) is refused: URLs end up in
// logs and history.

import { api, ApiError, describe, tokenStore } from './api.js';
import { clearError } from './banner.js';
import { $ } from './dom.js';
import { resetMemoryPanel } from './memory_panel.js';
import { stopFollowing } from './run.js';
import { setToken, signedIn, signedOut, state } from './state.js';
import {
  loadThreads, openLinkedThread, selectThread, showEmptyThread,
} from './threads.js';

function showSignInError(message) {
  const errorLine = $('signin-error');
  errorLine.textContent = message;
  errorLine.hidden = !message;
}

/** A line that is not an error (the account was deleted), above the form; '' hides it. */
function showSignInNotice(message) {
  const notice = $('signin-notice');
  notice.textContent = message;
  notice.hidden = !message;
}

/** Take `login` and `token` out of the address bar (and this history entry) at once. */
function stripCredentialParams() {
  const params = new URLSearchParams(location.search);
  const found = { login: params.get('login'), token: params.has('token') };
  if (params.has('login') || params.has('token')) {
    params.delete('login');
    params.delete('token');
    const query = params.toString();
    history.replaceState(null, '', location.pathname + (query ? `?${query}` : '') + location.hash);
  }
  return found;
}

/** Exchange a login link's code for a session token, then sign in with it. */
export async function signInWithLoginCode(code) {
  showSignInError('');
  $('sign-in').disabled = true;
  let session;
  try {
    session = await api('POST', '/session', { json: { login_code: code } });
  } catch (err) {
    showSignInError(err instanceof ApiError && (err.status === 401 || err.status === 422)
      ? 'This login link was already used or has expired. Ask for a new one, or sign in with an API token.'
      : `Could not sign in: ${describe(err)}`);
    return false;
  } finally {
    $('sign-in').disabled = false;
  }
  return signIn(session.token);
}

/** The first sign-in of a page load: a login link's code, else the remembered token. */
export function signInOnLoad() {
  const fromUrl = stripCredentialParams();
  if (fromUrl.login) return signInWithLoginCode(fromUrl.login);
  if (fromUrl.token) {
    showSignInError('A token in a link is never accepted (links end up in logs). '
      + 'Sign in with your API token, or open a new login link.');
    $('token-input').focus();
    return Promise.resolve(false);
  }
  const token = tokenStore.get();
  if (!token) {
    $('token-input').focus();
    return Promise.resolve(false);
  }
  $('token-input').value = token;
  return signIn(token);
}

export async function signIn(token) {
  const errorLine = $('signin-error');
  errorLine.hidden = true;
  showSignInNotice('');
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
  // the address names a thread (and maybe a message: a link opened in a new tab)
  const wanted = new URLSearchParams(location.hash.slice(1));
  const linked = wanted.get('thread');
  const opened = linked && (await openLinkedThread(linked, wanted.get('message'))) === 'opened';
  if (!opened && state.threads[0]) await selectThread(state.threads[0].thread_id);
  else if (!opened) showEmptyThread();
  $('message-input').focus();
  return true;
}

export function signOut(message, notice = '') {
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
  showSignInNotice(notice);
  clearError();
  $('token-input').focus();
}

export function sessionExpired() {
  signOut('Your token is no longer valid. Sign in again.');
}

/** The account is gone (DELETE /me answered): sign out as Sign out does, and say so. */
export function accountDeleted(name) {
  signOut('', `The account “${name}” was deleted, with its threads, memory, files and tokens. `
    + 'Sign in with another account’s token, or close this page.');
}
