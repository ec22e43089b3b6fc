// Approve / reject cards of runs interrupted for a sensitive tool call.

import { api, ApiError, describe, runPath } from './api.js';
import { showError } from './banner.js';
import { $, el, pretty } from './dom.js';
import { clearAwaiting, setAwaiting } from './state.js';
import { appendToTranscript, scrollToBottom } from './transcript.js';

let hooks = { followRun: () => {}, reloadThread: () => {} };

/** What happens after a decision: follow the resumed run; reload the thread on a conflict. */
export function wireApprovals({ followRun, reloadThread }) {
  hooks = { followRun, reloadThread };
}

function actionRequests(request) {
  if (!request || typeof request !== 'object') return [];
  if (Array.isArray(request.action_requests)) return request.action_requests;
  if (Array.isArray(request.interrupts)) {
    return request.interrupts.flatMap((i) => (Array.isArray(i?.action_requests) ? i.action_requests : []));
  }
  return [];
}

/** Why a memory write waits for the user (the server asks only in a run that read untrusted text). */
const MEMORY_WRITE_REASON = 'This needs your approval because this run read other conversations or '
  + 'files before asking to remember: that text may have asked for it, not you.';

/** One action to decide: a memory write shows what would be remembered; any other tool its args. */
function actionView(a) {
  const name = String(a?.name || 'tool');
  const args = a?.args && typeof a.args === 'object' ? a.args : {};
  const head = el('code', { class: 'tool-name', 'data-testid': 'approval-tool' }, name);
  if (name !== 'remember_memory') {
    return el('div', { class: 'approval-action', 'data-testid': 'approval-action' },
      head, el('pre', { class: 'tool-args', 'data-testid': 'approval-args' }, pretty(a?.args ?? {})));
  }
  const replaces = typeof args.replaces === 'string' && args.replaces ? args.replaces : null;
  return el('div', {
    class: 'approval-action approval-memory', 'data-testid': 'approval-action', 'data-kind': 'memory',
  },
    head,
    el('div', { class: 'tool-section-label' }, replaces ? 'Correct memory to' : 'Remember'),
    el('blockquote', { class: 'memory-quote', 'data-testid': 'approval-memory-content' }, String(args.content ?? '')),
    replaces ? el('div', { class: 'tool-section-label' }, 'in place of') : null,
    replaces
      ? el('blockquote', { class: 'memory-quote old', 'data-testid': 'approval-memory-replaces' }, replaces)
      : null,
    el('p', { class: 'approval-reason small', 'data-testid': 'approval-reason' }, MEMORY_WRITE_REASON));
}

export function showApproval(runId, request) {
  for (const old of $('transcript').querySelectorAll('[data-testid="approval-card"]')) {
    if (old.dataset.runId === runId) old.remove();
  }
  const actions = actionRequests(request);
  const approve = el('button', { type: 'button', class: 'primary', 'data-testid': 'approve' }, 'Approve');
  const reject = el('button', { type: 'button', class: 'danger', 'data-testid': 'reject' }, 'Reject');
  const status = el('p', { class: 'approval-status muted small', 'data-testid': 'approval-status' });
  const card = el('div', {
    class: 'approval-card',
    'data-testid': 'approval-card',
    'data-run-id': runId,
    'data-state': 'pending',
    role: 'group',
    'aria-label': 'Approval required',
  },
  el('div', { class: 'approval-title' }, 'Approval needed'),
  el('p', { class: 'small' }, intro(actions)),
  ...actions.map(actionView),
  actions.length ? null : el('pre', { class: 'tool-args' }, pretty(request)),
  el('div', { class: 'approval-buttons' }, approve, reject),
  status);
  approve.addEventListener('click', () => decide(card, runId, 'approve'));
  reject.addEventListener('click', () => decide(card, runId, 'reject'));
  setAwaiting(runId);
  appendToTranscript(card);
  scrollToBottom(true);
  return card;
}

function intro(actions) {
  if (actions.length && actions.every((a) => a?.name === 'remember_memory')) {
    return 'The assistant wants to save this to your memory:';
  }
  return actions.length === 1
    ? 'The assistant wants to run this action:'
    : 'The assistant wants to run these actions:';
}

async function decide(card, runId, decision) {
  const buttons = card.querySelectorAll('button');
  const status = card.querySelector('[data-testid="approval-status"]');
  for (const b of buttons) b.disabled = true;
  status.textContent = decision === 'approve' ? 'Approving…' : 'Rejecting…';
  let run;
  try {
    run = await api('POST', runPath(runId, '/resume'), { json: { decision } });
  } catch (err) {
    for (const b of buttons) b.disabled = false;
    status.textContent = '';
    showError(`Could not send your decision: ${describe(err)}`);
    if (err instanceof ApiError && err.status === 409) hooks.reloadThread();
    return;
  }
  card.dataset.state = decision === 'approve' ? 'approved' : 'rejected';
  card.querySelector('.approval-title').textContent = decision === 'approve' ? 'Approved' : 'Rejected';
  card.querySelector('.approval-buttons').remove();
  status.textContent = decision === 'approve' ? 'Approved — resuming.' : 'Rejected — resuming.';
  clearAwaiting(runId);
  hooks.followRun(run.run_id);
}
