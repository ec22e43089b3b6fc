// Approve / reject cards of runs interrupted for a sensitive tool call, and the decided cards
// that stay in the transcript. The server's decision is the truth: a card clicked after another
// tab or session decided the other way shows that decision ("Already approved in another tab or
// session — the file was written"), and what a decision came to is read from the run it started
// and the tool cards above it, never assumed.

import { api, ApiError, describe, runPath } from './api.js';
import { showError } from './banner.js';
import { $, el, pretty } from './dom.js';
import { clearAwaiting, setAwaiting } from './state.js';
import { appendToTranscript, scrollToBottom } from './transcript.js';
import { ACTIVE } from './vocabulary.js';

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

/**
 * Why a memory write waits for the user: the server says it in the action's description (the run
 * read untrusted text, and/or the content looks like a secret — it names the kind, never the
 * secret). This is the fallback for a request that carries no description.
 */
const MEMORY_WRITE_REASON = 'This needs your approval because this run read other conversations or '
  + 'files before asking to remember: that text may have asked for it, not you.';

function memoryWriteReason(a) {
  return typeof a?.description === 'string' && a.description.trim() ? a.description : MEMORY_WRITE_REASON;
}

const SUMMARY_VALUE_CHARS = 60;

/** One argument in a line: short text as it is, longer text cut on a character boundary. */
function argSummary(key, value) {
  let shown;
  if (typeof value === 'string') {
    const chars = Array.from(value);
    shown = chars.length <= SUMMARY_VALUE_CHARS
      ? JSON.stringify(value)
      : `${JSON.stringify(chars.slice(0, SUMMARY_VALUE_CHARS).join(''))}… (${chars.length} characters)`;
  } else if (value === null || typeof value !== 'object') {
    shown = String(value);
  } else {
    shown = Array.isArray(value) ? `a list of ${value.length}` : 'an object';
  }
  return `${key}: ${shown}`;
}

/**
 * A short summary of a call's arguments: the tool card just above the approval card already shows
 * them in full, so they are not repeated.
 */
function summary(args) {
  const keys = Object.keys(args);
  const lines = keys.map((k) => argSummary(k, args[k]));
  return el('ul', { class: 'approval-summary small', 'data-testid': 'approval-summary' },
    ...(lines.length ? lines : ['no arguments']).map((line) => el('li', {}, line)));
}

/** One action to decide: a memory write shows what would be remembered; any other tool a summary. */
function actionView(a) {
  const name = String(a?.name || 'tool');
  const args = a?.args && typeof a.args === 'object' ? a.args : {};
  const head = el('code', { class: 'tool-name', 'data-testid': 'approval-tool' }, name);
  if (name !== 'remember_memory') {
    return el('div', { class: 'approval-action', 'data-testid': 'approval-action' },
      head, summary(args),
      el('p', { class: 'muted small' }, 'The full arguments are in the tool card above.'));
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
    el('p', { class: 'approval-reason small', 'data-testid': 'approval-reason' }, memoryWriteReason(a)));
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

async function decide(card, runId, asked) {
  const buttons = card.querySelectorAll('button');
  const status = card.querySelector('[data-testid="approval-status"]');
  for (const b of buttons) b.disabled = true;
  status.textContent = asked === 'approve' ? 'Approving…' : 'Rejecting…';
  let decision = asked;
  let decidedBy;
  let elsewhere = false;
  try {
    decidedBy = (await api('POST', runPath(runId, '/resume'), { json: { decision: asked } })).run_id;
  } catch (err) {
    if (err instanceof ApiError && err.code === 'already_decided' && err.details?.decided_by_run_id) {
      // Another tab or session decided first: the server's decision is the truth, not ours.
      decision = err.details.decision;
      decidedBy = err.details.decided_by_run_id;
      elsewhere = true;
    } else {
      for (const b of buttons) b.disabled = false;
      status.textContent = '';
      showError(`Could not send your decision: ${describe(err)}`);
      if (err instanceof ApiError && err.status === 409) hooks.reloadThread();
      return;
    }
  }
  card.querySelector('.approval-buttons')?.remove();
  markDecided(card, decision, elsewhere);
  clearAwaiting(runId);
  hooks.followRun(decidedBy, { onSettled: (outcome) => settleCard(card, outcome) });
}

/** Words of a decision: the card's title, and how its status line starts. */
function decisionWords(decision, elsewhere) {
  const word = decision === 'approve' ? 'Approved' : 'Rejected';
  if (!elsewhere) return { title: word, lead: word };
  return {
    title: `Already ${word.toLowerCase()}`,
    lead: `Already ${word.toLowerCase()} in another tab or session`,
  };
}

/** Turn `card` into a decided one: `decision` taken here, or `elsewhere` (another tab). */
function markDecided(card, decision, elsewhere) {
  const { title, lead } = decisionWords(decision, elsewhere);
  card.dataset.state = decision === 'approve' ? 'approved' : 'rejected';
  card.dataset.decidedElsewhere = elsewhere ? 'true' : 'false';
  card.dataset.outcome = 'running';
  card.dataset.lead = lead;
  card.querySelector('.approval-title').textContent = title;
  card.querySelector('[data-testid="approval-status"]').textContent = `${lead} — the run goes on…`;
}

/** What approving did, by tool, once its run completed; and what rejecting left undone. */
const DONE_TEXT = {
  remember_memory: 'saved to your memory.',
  write_workspace_file: 'the file was written.',
  edit_workspace_file: 'the file was changed.',
};
const NOT_DONE_TEXT = {
  remember_memory: 'nothing was saved to your memory.',
  write_workspace_file: 'the file was not written.',
  edit_workspace_file: 'the file was not changed.',
};

/** The open transcript's cards of the calls the interruption `runId` asked about. */
function heldCards(runId) {
  return [...$('transcript').querySelectorAll('[data-testid="tool-event"]')].filter(
    (c) => c.dataset.runId === runId && c.dataset.toolName in DONE_TEXT);
}

/**
 * What the card says once the run its decision started has ended: read from the tool cards
 * above it (the server's results), so an approval says "the file was written" only when it was.
 */
function outcomeText(runId, decision, outcome) {
  if (outcome === 'failed') return 'the run failed (see below).';
  if (outcome === 'cancelled') return 'the run was stopped.';
  const cards = heldCards(runId);
  const name = cards.length ? cards[cards.length - 1].dataset.toolName : '';
  if (decision === 'reject') return NOT_DONE_TEXT[name] || 'the action was not run.';
  if (cards.some((c) => c.dataset.status === 'error')) return 'it failed (see the tool card above).';
  if (outcome === 'interrupted') return 'another action needs your approval below.';
  if (outcome === 'completed') return DONE_TEXT[name] || 'done.';
  return `the run ended (${outcome}).`;
}

function settleCard(card, outcome) {
  card.dataset.outcome = outcome;
  const decision = card.dataset.state === 'approved' ? 'approve' : 'reject';
  card.querySelector('[data-testid="approval-status"]').textContent =
    `${card.dataset.lead} — ${outcomeText(card.dataset.runId, decision, outcome)}`;
}

/**
 * A decision from the thread's stored history (`{run_id, decision, decided_by_run_id, status}`,
 * the thread view's `decisions`): a decided card after the interrupted run, so a reload still
 * shows what the user decided (`settleDecidedCard` completes it once placed).
 */
export function decidedCard(d) {
  const status = el('p', { class: 'approval-status muted small', 'data-testid': 'approval-status' });
  const card = el('div', {
    class: 'approval-card decided',
    'data-testid': 'approval-card',
    'data-run-id': d.run_id,
    'data-decided-by': d.decided_by_run_id,
    'data-state': 'pending',
    role: 'group',
    'aria-label': 'Your decision',
  }, el('div', { class: 'approval-title' }), status);
  markDecided(card, d.decision, false);
  return card;
}

/** A stored decision's card, once placed: its outcome now, or when its live run settles. */
export function settleDecidedCard(card, status) {
  if (ACTIVE.has(status)) return { onSettled: (outcome) => settleCard(card, outcome) };
  settleCard(card, status);
  return null;
}
