"""A data directory made by the old embedded server (pgserver's PostgreSQL 16) is moved to
PostgreSQL 18 on start, its rows intact and the old directory kept aside; without the old
binaries the start is refused and the directory is left exactly as it was."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from yuxi.cli import app
from yuxi.db import embedded_cluster as cluster
from yuxi.db import embedded_upgrade as upgrading
from yuxi.db.embedded import EmbeddedPostgres
from yuxi.db.migrate import upgrade_sync
from yuxi.errors import ConfigurationError

CJK = "记忆检索：用户偏好用中文回答 🍵"
# The old server is started by the pgserver wheel itself, in its own process: a real data dir
# of the old embedded server, exactly as an older yuxi left it.
OLD_SERVER = (
    "import sys, warnings; from pathlib import Path\n"
    "warnings.simplefilter('ignore')\n"
    "import pgserver\n"
    "print(pgserver.get_server(Path(sys.argv[1]), cleanup_mode=None).get_uri(), flush=True)\n"
)


@pytest.fixture
def base() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="yuxi-upgrade-test-"))
    yield path
    for pgdata in [path / "pgdata", *path.glob("pgdata.pg*")]:
        if (pgdata / "PG_VERSION").exists():
            EmbeddedPostgres(pgdata).stop()
    shutil.rmtree(path, ignore_errors=True)


def _old_bin() -> Path:
    found = upgrading.old_bindir("16")
    assert found is not None, "the dev extra installs pgserver (PostgreSQL 16 binaries)"
    return found


def make_old_data_dir(pgdata: Path) -> None:
    """A PostgreSQL 16 data dir with our schema at head, a user, a CJK message, a table of our
    own with a sequence and a text index, and a second database; left stopped."""
    done = subprocess.run(
        [sys.executable, "-c", OLD_SERVER, str(pgdata)],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    url = done.stdout.strip().splitlines()[-1]
    upgrade_sync(url)
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SHOW server_version_num").fetchone()[0].startswith("16")  # type: ignore[index]
        conn.execute("INSERT INTO users (uid, name) VALUES ('u1', %s)", ("用户一",))
        conn.execute(
            "INSERT INTO conversations (thread_id, uid, title) VALUES ('t1', 'u1', %s)", (CJK,)
        )
        conn.execute(
            "INSERT INTO messages (conversation_id, uid, role, content) "
            "SELECT id, 'u1', 'user', %s FROM conversations WHERE thread_id = 't1'",
            (CJK,),
        )
        conn.execute(
            "CREATE TABLE notes (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            "body text NOT NULL, meta jsonb NOT NULL DEFAULT '{}')"
        )
        conn.execute("CREATE INDEX ix_notes_body ON notes (body)")
        conn.execute(
            "INSERT INTO notes (body, meta) SELECT %(t)s || ' ' || i || ' Ärger Σοφία', "
            "jsonb_build_object('n', i, 't', %(t)s::text) FROM generate_series(1, 500) AS i",
            {"t": CJK},
        )
        conn.execute("CREATE DATABASE extra")
    with psycopg.connect(url.replace("/postgres?", "/extra?"), autocommit=True) as conn:
        conn.execute("CREATE TABLE kv (k text PRIMARY KEY, v text)")
        conn.execute("INSERT INTO kv VALUES ('键', '值'), ('k2', 'v2')")
    cluster.run(
        [str(_old_bin() / "pg_ctl"), "-D", str(pgdata), "-w", "-m", "fast", "stop"],
        user=cluster.owner_of(pgdata),
    )


def fingerprint(root: Path) -> dict[str, str]:
    """Every path under ``root`` with its mode, owner and content hash."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "-"
        found[str(path.relative_to(root))] = f"{info.st_mode:o} {info.st_uid} {digest}"
    return found


def test_an_old_data_dir_is_moved_to_18_with_its_rows_and_kept_aside(base: Path) -> None:
    pgdata = base / "pgdata"
    make_old_data_dir(pgdata)
    assert cluster.pg_version(pgdata) == "16"

    server = EmbeddedPostgres(pgdata)
    url = server.start()
    assert server.started_by_us
    assert cluster.pg_version(pgdata) == cluster.PG_MAJOR
    kept = list(base.glob("pgdata.pg16-*"))
    assert len(kept) == 1 and cluster.pg_version(kept[0]) == "16"
    assert not list(base.glob("pgdata.pg18-new-*"))  # the build was renamed into place
    assert not (pgdata / upgrading.COMPLETE_MARKER).exists()
    if cluster.is_root():  # each cluster belongs to the system user of its own server
        assert cluster.owner_of(kept[0]) == "pgserver"
        assert cluster.owner_of(pgdata) == cluster.SYSTEM_USER
    with psycopg.connect(url) as conn:
        assert conn.execute("SHOW server_version_num").fetchone()[0].startswith("18")  # type: ignore[index]
        assert conn.execute(
            "SELECT datlocprovider, datlocale FROM pg_database WHERE datname = 'postgres'"
        ).fetchone() == ("b", "C.UTF-8")
        assert conn.execute("SELECT content FROM messages").fetchall() == [(CJK,)]
        assert conn.execute("SELECT name FROM users").fetchall() == [("用户一",)]
        assert conn.execute("SELECT count(*), max(id) FROM notes").fetchone() == (500, 500)
        # the identity sequence carried over: the next row continues, no duplicate key
        assert conn.execute("INSERT INTO notes (body) VALUES ('x') RETURNING id").fetchone() == (
            501,
        )
        # the builtin locale of the new cluster applies to the migrated rows
        assert conn.execute(
            "SELECT count(*) FROM notes WHERE body ILIKE '%ärger σοφία%'"
        ).fetchone() == (500,)
        assert conn.execute("SELECT meta->>'t' FROM notes WHERE id = 1").fetchone() == (CJK,)
        conn.commit()
    with psycopg.connect(url.replace("/postgres?", "/extra?")) as conn:
        assert conn.execute("SELECT v FROM kv WHERE k = '键'").fetchone() == ("值",)
        assert conn.execute(
            "SELECT datlocprovider FROM pg_database WHERE datname = 'extra'"
        ).fetchone() == ("b",)
    upgrade_sync(url)  # the moved database is at head: a no-op that must not fail
    reuse = EmbeddedPostgres(pgdata)
    assert reuse.start() == url and not reuse.started_by_us  # running: reused as it is
    assert list(base.glob("pgdata.pg16-*")) == kept
    assert server.stop() is True

    again = EmbeddedPostgres(pgdata)
    assert again.start() == url
    assert again.started_by_us  # a plain start of the 18 cluster, no second upgrade
    assert list(base.glob("pgdata.pg16-*")) == kept
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM notes").fetchone() == (501,)


def test_without_the_old_binaries_the_start_is_refused_and_nothing_changes(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pgdata = base / "pgdata"
    make_old_data_dir(pgdata)
    before = fingerprint(pgdata)
    monkeypatch.setattr(upgrading, "old_bindir", lambda major: None)

    with pytest.raises(ConfigurationError) as refused:
        EmbeddedPostgres(pgdata).start()
    assert "PostgreSQL 16" in str(refused.value)
    assert upgrading.UPGRADE_COMMAND in str(refused.value)
    assert fingerprint(pgdata) == before
    # nothing built or moved beside it (only the empty lock file of the data dir)
    assert sorted(p.name for p in base.iterdir()) == [".pgdata.lock", "pgdata"]
    assert not EmbeddedPostgres(pgdata).status().running


def test_an_upgrade_interrupted_between_the_renames_is_finished_at_the_next_start(
    base: Path,
) -> None:
    pgdata = base / "pgdata"
    build = base / "pgdata.pg18-new-20260101T000000Z"
    cluster.init_cluster(build)
    (build / upgrading.COMPLETE_MARKER).write_text("done\n")
    unfinished = base / "pgdata.pg18-new-20260101T000001Z"
    unfinished.mkdir()  # no marker: never used

    server = EmbeddedPostgres(pgdata)
    url = server.start()
    assert not build.exists() and unfinished.exists()
    assert not (pgdata / upgrading.COMPLETE_MARKER).exists()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_migrations_run_twice_on_a_new_embedded_cluster_and_build_the_term_index(
    base: Path,
) -> None:
    """Embedded 18 ships btree_gin, so migration 0008 builds the ranked search's term index
    with the owner as its first key (0005's trigram index is gone by then), and the terms fold
    case and width in every script."""
    server = EmbeddedPostgres(base / "pgdata")
    url = server.start()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE fresh")
    fresh = url.replace("/postgres?", "/fresh?")
    upgrade_sync(fresh)
    upgrade_sync(fresh)
    with psycopg.connect(fresh) as conn:
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes "
            "WHERE indexname LIKE 'ix_messages_%trgm' OR indexname = 'ix_message_search_uid_terms'"
        ).fetchall()
        assert [name for name, _ in indexes] == ["ix_message_search_uid_terms"]
        assert "USING gin (uid, terms)" in indexes[0][1]
        assert conn.execute(
            "SELECT 'Ä' ILIKE 'ä', 'Σ' ILIKE 'σ', lower('ÄΣ') = 'äσ'"
        ).fetchone() == (True, True, True)
        assert conn.execute("SELECT yuxi_search_terms('ÄΣ ＡＢＣ 乌龙茶 Moved')").fetchone() == (
            ["äσ", "abc", "乌龙", "龙茶", "乌", "龙", "茶", "move"],
        )


def test_yuxi_db_upgrade_server_moves_the_old_data_dir_then_has_nothing_to_do(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_old_data_dir(base / "pgdata")
    monkeypatch.delenv("YUXI_DATABASE_URL", raising=False)
    monkeypatch.setenv("YUXI_DATA_DIR", str(base))
    runner = CliRunner()
    first = runner.invoke(app, ["db", "upgrade-server"])
    assert first.exit_code == 0, first.output
    kept = list(base.glob("pgdata.pg16-*"))
    assert len(kept) == 1 and f"old data kept at {kept[0]}" in first.output
    assert cluster.pg_version(base / "pgdata") == cluster.PG_MAJOR
    assert not EmbeddedPostgres(base / "pgdata").status().running  # moved, not started
    second = runner.invoke(app, ["db", "upgrade-server"])
    assert second.exit_code == 0 and "nothing to upgrade" in second.output
