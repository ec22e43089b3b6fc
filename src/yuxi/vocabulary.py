"""The closed sets of names the database, the services, the API and the UI share.

Defined once here; ``yuxi.db.models`` turns them into CHECK constraints, the services and the API
test membership against them. The web UI mirrors the run status sets in
``web/static/vocabulary.js`` (the only other copy; ``tests/unit/test_vocabulary.py`` compares them).
"""

from __future__ import annotations

from typing import Final

# -- runs ---------------------------------------------------------------------------------------
RUN_TYPES: Final = ("chat", "resume", "subagent")
#: Run types a worker claims (SubAgent runs execute inside their parent's worker).
CLAIMABLE_RUN_TYPES: Final = ("chat", "resume")
#: Run types whose live, leased run may write MEMORY.md.
MEMORY_WRITE_RUN_TYPES: Final = ("chat", "resume")
#: The request ids the server derives start with one of these (``resume:<interrupted run id>``,
#: ``subagent:<parent run id>:<random>``); a client's ``request_id`` may not (issue 27 §6), so the
#: two can never collide and a decision is never answered by a run a client created.
SERVER_REQUEST_ID_PREFIXES: Final = ("resume:", "subagent:")

RUN_STATUSES: Final = ("pending", "running", "completed", "failed", "cancelled", "interrupted")
#: At most one run per thread is in one of these (a partial unique index).
ACTIVE_RUN_STATUSES: Final = ("pending", "running")
#: A run in one of these will not change any more (``interrupted`` waits for a *new* resume run).
SETTLED_RUN_STATUSES: Final = ("completed", "failed", "cancelled", "interrupted")

#: Why a run failed (``agent_runs.error_code``), besides the ``code`` of a Yuxi error that ended
#: it (``model_output_truncated``, ...).
RUN_ERROR: Final = "run_error"  # an unexpected exception
RUN_STEP_LIMIT: Final = "run_step_limit"  # more graph steps than limits.RUN_MAX_STEPS
RUN_LIMIT_EXCEEDED: Final = "run_limit_exceeded"  # its model-call or tool-call limit
RUN_TIMEOUT: Final = "run_timeout"  # its wall clock (YUXI_RUN_TIMEOUT_SECONDS)
MODEL_RATE_LIMITED: Final = "model_rate_limited"  # the provider said 429 after every retry
MODEL_TIMEOUT: Final = "model_timeout"  # the provider did not answer in time
MODEL_UNAVAILABLE: Final = "model_unavailable"  # 5xx or no connection after every retry
MODEL_REQUEST_REFUSED: Final = "model_request_refused"  # any other 4xx (auth, bad request)
LEASE_EXPIRED: Final = "worker_lease_expired"  # its worker stopped renewing the lease
PARENT_RUN_ENDED: Final = "parent_run_ended"  # a SubAgent run whose parent is over

# -- conversations ------------------------------------------------------------------------------
CONVERSATION_STATUSES: Final = ("active", "archived", "deleted")
CONVERSATION_SOURCES: Final = ("chat", "agent_call", "agent_evaluation")
#: One-shot runs (``POST /agent-calls``, ``yuxi eval run``), each in a thread of its own.
AGENT_CALL_SOURCES: Final = ("agent_call", "agent_evaluation")
#: Sources that history lookback never sees: exactly the one-shot agent calls.
HIDDEN_SOURCES: Final = AGENT_CALL_SOURCES
#: Threads whose runs see memory but never change it: an evaluation must not alter a user's
#: real memory. (An ``agent_call`` is the user's own request on their own token: it may write.)
MEMORY_READ_ONLY_SOURCES: Final = ("agent_evaluation",)
MESSAGE_ROLES: Final = ("user", "assistant", "system", "tool")

# -- tool calls ---------------------------------------------------------------------------------
TOOL_CALL_STATUSES: Final = ("pending", "success", "error")

# -- memory versions (the audit trail of MEMORY.md; never read into a prompt) -------------------
#: Who made a change: the agent's ``remember_memory``; the user (file API, UI, restore, undo); or
#: ``system`` for a change found on disk that no version recorded (a crash between publish and
#: record, an edit outside Yuxi, memory that predates versions), recorded on the next write.
MEMORY_VERSION_ACTORS: Final = ("agent", "user", "system")
#: What a change was. ``forget``: the entries a deleted thread wrote, removed with it (the
#: version names the thread); ``import``: a file the user brought in (untrusted input).
MEMORY_VERSION_KINDS: Final = (
    "add",
    "replace",
    "edit",
    "delete",
    "restore",
    "undo",
    "recovered",
    "forget",
    "import",
)

#: The decisions an approval offers (``POST /api/v1/runs/{id}/resume``); a ``resume`` run
#: carries one in its input.
APPROVAL_DECISIONS: Final = ("approve", "reject")

#: How an import lands (design.md §10.5): ``replace`` makes the file the imported one;
#: ``append`` adds the imported entries not already there after the current ones. Both record
#: one ``import`` version.
MEMORY_IMPORT_MODES: Final = ("replace", "append")

# -- memory lint (deterministic findings shown to the owner, never to the model) ---------------
MEMORY_LINT_CODES: Final = (
    "duplicate",
    "near_duplicate",
    "secret_like",
    "injection_like",
    "outside_prompt_window",
    "oversized_entry",
)

#: Why a ``remember_memory`` waits for the user's approval (a rejected write's ``reasons``): its
#: content is what the lint classes ``secret_like``, or the run read untrusted input first.
MEMORY_WRITE_HOLD_REASONS: Final = ("secret_like", "tainted")

# -- credentials (the log redaction in ``yuxi.api.access_log`` recognises these prefixes) ------
#: An API or browser session token: this prefix + 43 URL-safe characters; sent only as
#: ``Authorization: Bearer``.
TOKEN_PREFIX: Final = "yx_"  # noqa: S105 - a public prefix, not a secret
#: A login code: short-lived and single-use, the only credential a login link ever carries.
LOGIN_CODE_PREFIX: Final = "yl_"
#: The label of the token a login code is exchanged for.
SESSION_TOKEN_LABEL: Final = "browser session"  # noqa: S105 - a label
