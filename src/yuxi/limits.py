"""Every size and count limit of Yuxi, in one table. Sizes are UTF-8 bytes unless named ``CHARS``.

A limit is defined here once and imported by the module that enforces it; tests import the same
names to probe each boundary (n accepted, n + 1 refused). ``docs/architecture.md`` lists which
module enforces which limit.
"""

from __future__ import annotations

KIB = 1024

# -- long-term memory (MEMORY.md) ---------------------------------------------------------------
#: ``remember_memory(content=…)``, stored stripped.
MEMORY_CONTENT_MAX_BYTES = 4 * KIB
#: ``remember_memory(replaces=…)``, kept exactly.
MEMORY_REPLACES_MAX_BYTES = 4 * KIB
#: The whole file, for every writer (the tool, the file API, the generic file tools).
MEMORY_FILE_MAX_BYTES = 128 * KIB
#: What one run injects into the system prompt (cut on a character boundary, with a note).
MEMORY_PROMPT_MAX_BYTES = 24 * KIB
#: One entry (a blank-line-separated block or one list item) larger than this is linted
#: ``oversized_entry``: more than one ``remember_memory`` could ever have written at once.
MEMORY_ENTRY_MAX_BYTES = MEMORY_CONTENT_MAX_BYTES
#: Candidate pairs of entries the ``near_duplicate`` lint looks at, at most, per lint (a bound
#: on CPU for a hostile file; ordinary files of the maximum size stay far below).
MEMORY_LINT_COMPARISONS_MAX = 50_000

# -- memory versions (retention per user, oldest out first; the newest is always kept) ----------
MEMORY_VERSIONS_KEEP = 100
#: Sum of the retained versions' content sizes.
MEMORY_VERSIONS_MAX_BYTES = 2 * 1024 * KIB
#: A memory export document sent to ``POST /api/v1/memory/import`` (JSON): it holds every
#: retained version's content and diff, so up to about three times the retention bound, plus
#: room for JSON escaping. Its ``content`` must still fit ``MEMORY_FILE_MAX_BYTES``; a Markdown
#: import is bounded by ``MEMORY_FILE_MAX_BYTES`` itself.
MEMORY_IMPORT_DOCUMENT_MAX_BYTES = 16 * 1024 * KIB

# -- memory write quota per run (defaults of YUXI_MEMORY_WRITES_PER_RUN / _BYTES_PER_RUN) --------
MEMORY_WRITES_PER_RUN = 5
#: Bytes of added text (``content`` of each write that changed the file).
MEMORY_BYTES_PER_RUN = 8 * KIB

# -- shared agent context (AGENTS.md, USER.md) --------------------------------------------------
CONTEXT_FILE_MAX_BYTES = 64 * KIB

# -- history lookback tools ---------------------------------------------------------------------
SEARCH_QUERY_MAX_CHARS = 256
SEARCH_MAX_ITEMS = 10
SEARCH_SNIPPET_BYTES = 512
#: Each hit carries the visible message before and after it in its thread (often where the
#: answer is: a question's reply, a statement's follow-up), each at most this many bytes of
#: its text nearest the hit; read from at most SEARCH_CONTEXT_READ_CHARS characters.
SEARCH_CONTEXT_BYTES = 256
SEARCH_CONTEXT_READ_CHARS = 1024
SEARCH_RESPONSE_BYTES = 16 * KIB
#: Distinct terms of one query that are searched (the first ones, quoted phrases' first); the
#: response names the ones left out. A keyword query has a handful; a pasted paragraph would
#: otherwise make every message a candidate.
SEARCH_MAX_TERMS = 16
#: Quoted phrases in one query.
SEARCH_MAX_PHRASES = 4
#: ``after`` / ``before`` / ``thread_id`` arguments longer than this are refused unparsed.
SEARCH_FILTER_MAX_CHARS = 64
#: A user with at most this many visible messages is always ranked over all of them.
SEARCH_FULL_CORPUS_MESSAGES = 2_000
#: Beyond that, each term's holders are counted up to ``SEARCH_TERM_HOLDERS // terms``: a term
#: with more is *common*. Ranking every holder of common terms would read tens of thousands of
#: rows for a long history, so the search then ranks the visible ones among the newest
#: ``SEARCH_WINDOW_MESSAGES`` (within the filters) together with every holder of a rarer term,
#: and says so (``"complete": false``). Each holder read is a row of ``message_search``; these
#: two keep a search's reads within a few thousand rows (docs/performance.md).
SEARCH_TERM_HOLDERS = 3_000
SEARCH_WINDOW_MESSAGES = 1_000
READ_MAX_MESSAGES = 20
READ_MESSAGE_BYTES = 8 * KIB
READ_CONTENTS_BYTES = 32 * KIB
READ_RESPONSE_BYTES = 64 * KIB
TOOLS_MAX_ITEMS = 10
TOOL_ITEM_BYTES = 4 * KIB
TOOLS_TOTAL_BYTES = 16 * KIB
#: A thread title inside search items and read responses.
TITLE_BYTES = 256
THREAD_ID_MAX_CHARS = 64
#: The owner's views (API): threads listed at most, messages of one thread shown at most.
LIST_MAX_CONVERSATIONS = 200
LIST_MAX_MESSAGES = 1000

# -- threads ----------------------------------------------------------------------------------
TITLE_MAX_CHARS = 200
#: A thread's automatic title: the first line of its first message.
AUTO_TITLE_MAX_CHARS = 80

# -- the chat model and each run's budget (defaults of the YUXI_* settings of the same names) ---
#: ``max_tokens`` of every model call (YUXI_MODEL_MAX_TOKENS).
MODEL_MAX_TOKENS = 2048
#: One model request's timeout (YUXI_MODEL_TIMEOUT_SECONDS) and retries (YUXI_MODEL_MAX_RETRIES).
MODEL_TIMEOUT_SECONDS = 60.0
MODEL_MAX_RETRIES = 2
#: Model calls and tool calls one run may make (YUXI_RUN_MODEL_CALL_LIMIT, _TOOL_CALL_LIMIT).
RUN_MODEL_CALL_LIMIT = 25
RUN_TOOL_CALL_LIMIT = 50
#: A run's wall clock, enforced by its worker (YUXI_RUN_TIMEOUT_SECONDS).
RUN_TIMEOUT_SECONDS = 600.0

# -- runs ---------------------------------------------------------------------------------------
#: A user message (``POST /threads/{id}/runs``, agent calls).
RUN_INPUT_MAX_BYTES = 32 * KIB
REQUEST_ID_MAX_CHARS = 128
#: A task handed to a SubAgent.
SUBAGENT_TASK_MAX_BYTES = 8 * KIB
#: The text of a ``tool_end`` event and of a tool call in the thread view (the full output stays
#: in the ToolCall row). As large as a whole ``search_thread_messages`` or ``list_threads``
#: response (16 KiB), so the UI can show those as readable hits instead of cut JSON.
EVENT_TEXT_BYTES = 16 * KIB
#: Graph steps (model calls, tool rounds and middleware hooks) one run may take before it fails
#: as ``run_step_limit`` — a model that keeps calling tools cannot run forever.
RUN_MAX_STEPS = 100
#: Model responses in a row whose tool calls were refused as cut off or malformed before the run
#: fails with ``model_output_truncated`` (each refusal tells the model and lets it retry).
MODEL_REFUSED_RESPONSES_MAX = 3
#: A run identity value (uid, thread, run, request, worker token).
IDENTITY_VALUE_MAX_CHARS = 256

# -- waiting for runs (workers, ``?wait=true``, event streams) ----------------------------------
#: The safety-net poll (default of YUXI_POLL_SECONDS): notifications wake workers and streams at
#: once; this slow poll only bounds how late a lost notification makes anything.
POLL_SECONDS = 5.0
#: ``?wait=true`` answers after this long even if the run has not settled.
RUN_WAIT_MAX_SECONDS = 120.0
#: A quiet event stream asks (without a query) whether its client is still there this often.
STREAM_IDLE_CHECK_SECONDS = 15.0
#: The keep-alive comment an open event stream sends while nothing happens.
STREAM_PING_SECONDS = 15

# -- workspace files ----------------------------------------------------------------------------
#: ``read_workspace_file`` returns at most this much.
TOOL_READ_MAX_BYTES = 64 * KIB
#: ``write_workspace_file`` / ``edit_workspace_file`` results.
TOOL_WRITE_MAX_BYTES = 1024 * KIB
#: The workspace file API (request bodies and reads).
FILE_API_MAX_BYTES = 1024 * KIB

# -- users ----------------------------------------------------------------------------------
#: A user's name (``yuxi users create NAME``): stripped, not blank, unique per installation.
USER_NAME_MAX_CHARS = 200

# -- credentials (API tokens, browser sessions, login codes) -----------------------------------
#: Longer than any token or code we issue (``yx_`` / ``yl_`` + 43 characters); a longer or
#: non-ASCII credential is refused before it is hashed.
CREDENTIAL_MAX_CHARS = 256
#: A login code (what a login link carries) is accepted once, within this many seconds.
LOGIN_CODE_TTL_SECONDS = 5 * 60
#: A browser session token (what a login code is exchanged for) expires after this long.
SESSION_TOKEN_TTL_SECONDS = 30 * 24 * 60 * 60
#: A token created with an expiry (``yuxi tokens create --days N``) lives at most this many days.
TOKEN_MAX_DAYS = 3650

# -- operations (/metrics, /readyz) ---------------------------------------------------------------
#: YUXI_METRICS_TOKEN: a scraper's Bearer token must be at least this long.
METRICS_TOKEN_MIN_CHARS = 16
#: GET /readyz: the database must answer ``SELECT 1`` within this many seconds.
READINESS_TIMEOUT_SECONDS = 2.0

# -- HTTP request bodies --------------------------------------------------------------------------
#: Any request body but the two that stream under their own limits (a workspace file ``PUT``,
#: a memory import). The largest body a route takes is a run's input: RUN_INPUT_MAX_BYTES of
#: text, at most 6 bytes of JSON per byte of text (``\u0001``), plus its request id.
REQUEST_BODY_MAX_BYTES = 8 * RUN_INPUT_MAX_BYTES

# -- history lookback: list_threads ---------------------------------------------------------------
#: ``list_threads(limit=…)``: 1..this many threads per call (the default is 10).
LIST_THREADS_MAX_ITEMS = 20
LIST_THREADS_DEFAULT_ITEMS = 10
#: The first line of a thread's first visible user message, as listed.
FIRST_USER_LINE_BYTES = 200
#: The whole ``list_threads`` response (the oldest items go first). 20 items of the largest
#: size fit (about 14 KiB), so this is a guard, not a cut a real listing meets.
LIST_THREADS_RESPONSE_BYTES = 16 * KIB

# -- account export and deletion -----------------------------------------------------------------
#: Rows read per query while an account is exported (threads, messages, runs): the export holds
#: one page at a time, never the whole account.
ACCOUNT_EXPORT_PAGE_ROWS = 500
#: Bytes per chunk the export's zip is streamed in.
ACCOUNT_EXPORT_CHUNK_BYTES = 64 * KIB
#: A workspace file larger than this is listed in the export's manifest, not copied (nothing the
#: product writes is larger: the file API and the file tools stop at 1 MiB).
ACCOUNT_EXPORT_FILE_MAX_BYTES = FILE_API_MAX_BYTES

# -- the trash (deleted threads) ------------------------------------------------------------------
#: Days a deleted thread stays restorable before it is purged whole (default of
#: ``YUXI_TRASH_DAYS``; 0 = purged at once).
TRASH_DAYS = 30
#: The longest ``YUXI_TRASH_DAYS`` accepted (ten years).
TRASH_DAYS_MAX = 3650
#: Threads purged per transaction: the purge job's batch (a thread goes with its SubAgent
#: threads, messages, tool calls, runs, events and checkpoints).
TRASH_PURGE_BATCH_THREADS = 20
#: How often the worker pool's purge job looks for threads whose time in the trash is over.
TRASH_PURGE_INTERVAL_SECONDS = 60.0
#: Threads the trash view lists at most (newest deletion first).
TRASH_LIST_MAX_THREADS = 200
