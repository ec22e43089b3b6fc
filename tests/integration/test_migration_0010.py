"""Migration 0010 moves client runs out of the server's request-id namespace: a run whose
``request_id`` has a server prefix but is not what the server derives for it gets
``client:<its id>``; the server's own ids (a resume run's ``resume:<created_by_run_id>``, a
SubAgent's ``subagent:…``) and every other id stay. Running it twice changes nothing."""

from __future__ import annotations

import psycopg

from yuxi.db.migrate import upgrade_sync

_THREAD = (
    "INSERT INTO conversations (thread_id, uid, title, source, status) "
    "VALUES (%s, 'mig10', '', 'chat', 'active')"
)
_RUN = (
    "INSERT INTO agent_runs (id, uid, conversation_thread_id, request_id, run_type, status, "
    "created_by_run_id) VALUES (%s, 'mig10', %s, %s, %s, 'completed', %s)"
)

ROWS = [
    # id, thread, request id, type, created by
    ("r-interrupted", "t1", "plain-1", "chat", None),
    ("r-resume", "t1", "resume:r-interrupted", "resume", "r-interrupted"),
    ("r-other-int", "t1", "plain-2", "chat", None),
    ("r-planted", "t2", "resume:r-other-int", "chat", None),  # the hijack
    ("r-sub", "t3", "subagent:r-interrupted:abc", "subagent", "r-interrupted"),
    ("r-fake-sub", "t2", "subagent:r-interrupted:zzz", "chat", None),
    ("r-wrong-resume", "t1", "resume:r-interrupted-x", "resume", "r-other-int"),
    ("r-lookalike", "t2", "Resume:r-other-int", "chat", None),
]


def test_0010_moves_only_client_runs_out_of_the_server_namespace(empty_database_url: str) -> None:
    url = empty_database_url
    upgrade_sync(url, "0009")
    with psycopg.connect(url) as conn:
        conn.execute("INSERT INTO users (uid, name) VALUES ('mig10', 'mig10')")
        for thread in ("t1", "t2", "t3"):
            conn.execute(_THREAD, (thread,))
        for row in ROWS:
            conn.execute(_RUN, row)
    upgrade_sync(url)
    upgrade_sync(url)  # twice: a no-op
    with psycopg.connect(url) as conn:
        ids: dict[str, str] = dict(conn.execute("SELECT id, request_id FROM agent_runs").fetchall())
    assert ids == {
        "r-interrupted": "plain-1",
        "r-resume": "resume:r-interrupted",
        "r-other-int": "plain-2",
        "r-planted": "client:r-planted",
        "r-sub": "subagent:r-interrupted:abc",
        "r-fake-sub": "client:r-fake-sub",
        "r-wrong-resume": "client:r-wrong-resume",
        "r-lookalike": "Resume:r-other-int",
    }
