// Yuxi web UI — plain ES modules, no dependencies, no build step. This entry wires the modules:
// DOM events to handlers, store keys to the renderers that show them, and the few hooks by which
// a lower module asks a higher one to act (so that no two modules import each other).
//
// Modules: vocabulary (shared words) · dom (`el`, formatting) · state (the one store) · api
// (fetch, errors, token storage) · sse (run events, Last-Event-ID) · banner · transcript
// (bubbles, tool cards, history) · approvals · memory_panel · run (live runs) · threads ·
// composer · session (sign-in / sign-out).

import { tokenStore, wireApi } from './api.js';
import { wireApprovals } from './approvals.js';
import { clearError } from './banner.js';
import { updateComposer, onSend } from './composer.js';
import { $ } from './dom.js';
import {
  closeMemoryPanel, loadMemory, onMemoryClear, onMemoryEdited, onMemorySave, onMemoryToggle,
  renderMemoryPanel, renderMemorySwitch, toggleMemoryPanel,
} from './memory_panel.js';
import { followRun, onCancelRun, wireRuns } from './run.js';
import { sessionExpired, signIn, signOut } from './session.js';
import { SseParser } from './sse.js';
import { subscribe } from './state.js';
import { loadThreads, onArchive, onDelete, onNewThread, reloadThread, renderThreads } from './threads.js';

function wireModules() {
  wireApi({ unauthorized: sessionExpired });
  wireApprovals({ followRun, reloadThread });
  wireRuns({ settled: loadThreads });
  subscribe(['threads', 'threadId'], renderThreads);
  subscribe(['token', 'threadId', 'follow', 'awaiting'], updateComposer);
  subscribe(['enableMemory'], renderMemorySwitch);
  subscribe(['memory'], renderMemoryPanel);
}

function wireDom() {
  $('signin-form').addEventListener('submit', (e) => {
    e.preventDefault();
    signIn($('token-input').value);
  });
  $('sign-out').addEventListener('click', () => signOut());
  $('banner-close').addEventListener('click', clearError);
  $('memory-toggle').addEventListener('change', onMemoryToggle);
  $('new-thread').addEventListener('click', onNewThread);
  $('archive-thread').addEventListener('click', onArchive);
  $('delete-thread').addEventListener('click', onDelete);
  $('composer').addEventListener('submit', onSend);
  $('message-input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('cancel-run').addEventListener('click', onCancelRun);
  $('memory-panel-button').addEventListener('click', toggleMemoryPanel);
  $('memory-close').addEventListener('click', closeMemoryPanel);
  $('memory-reload').addEventListener('click', loadMemory);
  $('memory-conflict-reload').addEventListener('click', loadMemory);
  $('memory-save').addEventListener('click', onMemorySave);
  $('memory-clear').addEventListener('click', onMemoryClear);
  $('memory-text').addEventListener('input', onMemoryEdited);
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && !$('memory-panel').hidden) closeMemoryPanel();
  });
}

/** The first render of everything the store drives; later ones follow its changes. */
function renderAll() {
  renderThreads();
  updateComposer();
  renderMemorySwitch();
  renderMemoryPanel();
}

function start() {
  wireModules();
  wireDom();
  renderAll();
  // A token in the address bar (the login link `make run` prints) is taken once and removed
  // from the URL and the history entry at once.
  const params = new URLSearchParams(location.search);
  const fromUrl = params.get('token');
  if (params.has('token')) {
    params.delete('token');
    const query = params.toString();
    history.replaceState(null, '', location.pathname + (query ? `?${query}` : '') + location.hash);
  }
  const token = fromUrl || tokenStore.get();
  document.body.dataset.ready = 'true';
  if (token) {
    $('token-input').value = token;
    signIn(token);
  } else {
    $('token-input').focus();
  }
}

// exposed for the browser tests of the stream parser
window.YuxiSse = { SseParser };

start();
