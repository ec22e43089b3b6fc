// Yuxi web UI — plain ES modules, no dependencies, no build step. This entry wires the modules:
// DOM events to handlers, store keys to the renderers that show them, and the few hooks by which
// a lower module asks a higher one to act (so that no two modules import each other).
//
// Modules: vocabulary (shared words) · dom (`el`, formatting) · state (the one store) · api
// (fetch, errors, token storage) · sse (run events, Last-Event-ID) · banner (the error banner and
// the notice) · dialog (in-page confirmation) · transcript (bubbles, tool cards, history) ·
// approvals · memory_store (the panel's requests and status line) · memory_entries /
// memory_editor / memory_versions (the panel's three modes) · memory_import (Import…: a dry-run
// preview, then Apply with If-Match) · memory_panel (switch, open/close, modes) · memory_receipt
// (write receipts in the chat) · run (live runs) · thread_settings (rename, hidden from recall) ·
// thread_list (the sidebar and the chat header) · threads (their actions) · start_hint (the
// empty thread) · markdown (assistant replies, sanitised) · files_panel (the read-only
// workspace browser) · drawer (the thread list on a phone) · composer · session (sign-in with a
// token or a login link's code / sign-out) · account (the Account dialog: export the account as
// a zip, delete it after typing its name) · history_cards (the history tools' cards as answers)
// · thread_link (links that open a thread in the app) · thread_search (the search box over the
// thread list) · marks (the query's words marked) · when (times in words) · sync (catching up
// with other tabs and sessions when the page is looked at again).

import {
  cancelDelete, closeAccount, onDeleteInput, onDeleteSubmit, onExport, openAccount, openDelete,
  resetAccount, wireAccount,
} from './account.js';
import { wireApi } from './api.js';
import { wireApprovals } from './approvals.js';
import { clearError, clearNotice, onNoticeAction } from './banner.js';
import { showComposerHint, updateComposer, onSend } from './composer.js';
import { dialogOpen, wireDialog } from './dialog.js';
import { $ } from './dom.js';
import { closeDrawer, drawerOpen, setDrawer, toggleDrawer } from './drawer.js';
import {
  closeFilesPanel, refreshFilesPanel, resetFilesPanel, toggleFilesPanel,
} from './files_panel.js';
import {
  onConflictCopyMine, onConflictKeepMine, onClear, onRawInput, onRawSave, renderRawEditor,
} from './memory_editor.js';
import { applyFilter, renderMemoryEntries, wireMemoryEntries } from './memory_entries.js';
import {
  closeMemoryPanel, followMemoryView, onConflictTakeTheirs, onMemoryReload, onMemoryTabKey,
  onMemoryToggle, renderMemoryMode, renderMemorySwitch, retryFailedMemoryLoad, selectMemoryMode,
  toggleMemoryPanel, wireMemoryPanel,
} from './memory_panel.js';
import {
  onImportApply, onImportCancel, onImportClick, onImportFilePicked, onImportModeChange,
} from './memory_import.js';
import { onStatusUndo } from './memory_store.js';
import { followRun, onCancelRun, wireRuns } from './run.js';
import {
  accountDeleted, sessionExpired, signIn, signInOnLoad, signOut,
} from './session.js';
import { SseParser } from './sse.js';
import { refreshStartHint } from './start_hint.js';
import { subscribe } from './state.js';
import { noteOpenThread, refreshOnReturn } from './sync.js';
import { commitRename, onRecallToggle, onRenameKey, startRename } from './thread_settings.js';
import { onCopyThreadId, renderThreads, wireThreadList } from './thread_list.js';
import { wireThreadLinks } from './thread_link.js';
import { onSearchInput, onSearchKey, resetSearch } from './thread_search.js';
import { onTrashToggle, renderTrash, wireTrash } from './trash.js';
import {
  loadThreads, onArchive, onArchivedToggle, onDelete, onNewThread, onRestore, openLinkedThread,
  openSource, reloadThread, selectThread,
} from './threads.js';

function wireModules() {
  wireApi({ unauthorized: sessionExpired });
  wireApprovals({ followRun, reloadThread });
  // a run settled: the server answers again, so what a failed load left stale is loaded anew
  wireRuns({ settled: () => { loadThreads(); refreshFilesPanel(); retryFailedMemoryLoad(); } });
  wireThreadList({ select: selectThread, restore: onRestore });
  wireMemoryPanel({ opening: closeFilesPanel });
  wireMemoryEntries({ openSource });
  wireThreadLinks({ open: openLinkedThread });
  wireTrash({ open: selectThread, reload: loadThreads });
  wireDialog();
  wireAccount({ deleted: accountDeleted });
  subscribe(['threads', 'threadId', 'showArchived'], renderThreads);
  subscribe(['showTrash', 'trash'], renderTrash);
  subscribe(['threadId'], (s) => { if (s.threadId) closeDrawer(); });
  subscribe(['token'], (s) => {
    if (!s.token) { resetFilesPanel(); setDrawer(false); resetAccount(); clearNotice(); resetSearch(); }
  });
  subscribe(['enableMemory'], refreshStartHint);
  subscribe(['threadId'], noteOpenThread);
  // 'threads': the open thread's status (an archived thread takes no messages)
  subscribe(['token', 'threadId', 'threads', 'follow', 'awaiting'], updateComposer);
  subscribe(['enableMemory'], renderMemorySwitch);
  subscribe(['memory'], renderRawEditor);
  subscribe(['memoryView'], renderMemoryEntries);
  subscribe(['memoryView'], followMemoryView);
  subscribe(['memoryMode'], renderMemoryMode);
}

function wireDom() {
  $('signin-form').addEventListener('submit', (e) => {
    e.preventDefault();
    signIn($('token-input').value);
  });
  $('sign-out').addEventListener('click', () => signOut());
  $('account-button').addEventListener('click', openAccount);
  $('account-close').addEventListener('click', closeAccount);
  $('account-export').addEventListener('click', onExport);
  $('account-delete').addEventListener('click', openDelete);
  $('account-delete-input').addEventListener('input', onDeleteInput);
  $('account-delete-form').addEventListener('submit', onDeleteSubmit);
  $('account-delete-cancel').addEventListener('click', cancelDelete);
  $('banner-close').addEventListener('click', clearError);
  $('notice-close').addEventListener('click', () => clearNotice());
  $('notice-action').addEventListener('click', onNoticeAction);
  $('memory-toggle').addEventListener('change', onMemoryToggle);
  $('new-thread').addEventListener('click', onNewThread);
  $('archive-thread').addEventListener('click', onArchive);
  $('restore-thread').addEventListener('click', () => onRestore());
  $('archived-toggle').addEventListener('click', onArchivedToggle);
  $('thread-search-input').addEventListener('input', onSearchInput);
  $('thread-search-input').addEventListener('keydown', onSearchKey);
  $('trash-toggle').addEventListener('click', onTrashToggle);
  $('trash-back').addEventListener('click', onTrashToggle);
  $('copy-thread-id').addEventListener('click', onCopyThreadId);
  // another tab or session may have changed what this page shows (sync.js says why on return)
  document.addEventListener('visibilitychange', refreshOnReturn);
  window.addEventListener('focus', refreshOnReturn);
  $('threads-toggle').addEventListener('click', toggleDrawer);
  $('drawer-close').addEventListener('click', () => setDrawer(false));
  $('files-panel-button').addEventListener('click', toggleFilesPanel);
  $('files-close').addEventListener('click', closeFilesPanel);
  $('files-reload').addEventListener('click', refreshFilesPanel);
  $('delete-thread').addEventListener('click', onDelete);
  $('composer').addEventListener('submit', onSend);
  $('message-input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('message-input').addEventListener('input', () => showComposerHint(''));
  $('cancel-run').addEventListener('click', onCancelRun);
  $('rename-thread').addEventListener('click', startRename);
  $('thread-title-form').addEventListener('submit', commitRename);
  $('thread-title-input').addEventListener('keydown', onRenameKey);
  $('thread-title-input').addEventListener('blur', () => {
    if (!$('thread-title-form').hidden) commitRename();
  });
  $('recall-toggle').addEventListener('change', onRecallToggle);
  $('memory-panel-button').addEventListener('click', toggleMemoryPanel);
  $('memory-close').addEventListener('click', closeMemoryPanel);
  for (const tab of document.querySelectorAll('.memory-tabs [role="tab"]')) {
    tab.addEventListener('click', () => selectMemoryMode(tab.dataset.mode));
    tab.addEventListener('keydown', onMemoryTabKey);
  }
  $('memory-filter').addEventListener('input', applyFilter);
  $('memory-reload').addEventListener('click', onMemoryReload);
  $('memory-save').addEventListener('click', onRawSave);
  $('memory-clear').addEventListener('click', onClear);
  $('memory-import').addEventListener('click', onImportClick);
  $('memory-import-file').addEventListener('change', onImportFilePicked);
  $('memory-import-apply').addEventListener('click', onImportApply);
  $('memory-import-cancel').addEventListener('click', onImportCancel);
  $('memory-import-mode').addEventListener('change', onImportModeChange);
  $('memory-text').addEventListener('input', onRawInput);
  $('memory-status-undo').addEventListener('click', onStatusUndo);
  $('memory-conflict-mine-keep').addEventListener('click', onConflictKeepMine);
  $('memory-conflict-take-theirs').addEventListener('click', onConflictTakeTheirs);
  $('memory-conflict-copy').addEventListener('click', onConflictCopyMine);
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape' || dialogOpen()) return;
    if (!$('memory-panel').hidden) {
      // cancelled, so that this Escape does not also dismiss the question closing may ask
      e.preventDefault();
      closeMemoryPanel();
    } else if (!$('files-panel').hidden) {
      closeFilesPanel();
    } else if (drawerOpen()) {
      setDrawer(false);
    }
  });
}

/** The first render of everything the store drives; later ones follow its changes. */
function renderAll() {
  renderThreads();
  renderTrash();
  updateComposer();
  renderMemorySwitch();
  renderRawEditor();
  renderMemoryEntries();
  renderMemoryMode();
}

function start() {
  wireModules();
  wireDom();
  renderAll();
  document.body.dataset.ready = 'true';
  signInOnLoad();
}

// exposed for the browser tests of the stream parser
window.YuxiSse = { SseParser };

start();
