// The words the UI shares with the server, each defined once.

export const API = 'api/v1';
export const TOKEN_KEY = 'yuxi.token';
export const MEMORY_PATH = 'agents/MEMORY.md';

/** Run statuses: a settled run never changes again; an active one may still produce events. */
export const SETTLED = new Set(['completed', 'failed', 'cancelled', 'interrupted']);
export const ACTIVE = new Set(['pending', 'running']);

/** What the status bar says while a run is active (or waiting). */
export const RUN_STATUS_TEXT = {
  pending: 'Waiting for a worker…',
  running: 'Thinking…',
  interrupted: 'Waiting for your approval',
};

/**
 * Tool card statuses. The server's tool call statuses are pending / success / error; on a card,
 * `running` is a call under way, `pending` one awaiting approval and `unfinished` one whose run
 * settled without running it.
 */
export const TOOL_STATUS_TEXT = {
  running: 'running…',
  pending: 'awaiting approval',
  unfinished: 'not run',
  success: 'success',
  error: 'error',
};

/** The memory audit trail (`yuxi.vocabulary`: MEMORY_VERSION_ACTORS / _KINDS), in words. */
export const MEMORY_VERSION_ACTOR_TEXT = {
  agent: 'Assistant',
  user: 'You',
  system: 'System',
};

export const MEMORY_VERSION_KIND_TEXT = {
  add: 'added',
  replace: 'corrected',
  edit: 'edited',
  delete: 'deleted',
  restore: 'restored',
  undo: 'undid a change',
  recovered: 'recorded a change found on disk',
  forget: 'forgot what a deleted thread wrote',
  import: 'imported a file',
};

/** Memory lint findings (`yuxi.vocabulary.MEMORY_LINT_CODES`), as the panel labels them. */
export const MEMORY_LINT_TEXT = {
  duplicate: 'Duplicate',
  near_duplicate: 'Near duplicate',
  secret_like: 'Looks like a secret',
  injection_like: 'Looks like an instruction to the assistant',
  outside_prompt_window: 'Not seen by the assistant',
  oversized_entry: 'Very long entry',
};
