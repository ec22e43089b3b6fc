"""The backup manifest's checks and the client-tool choice, without a database."""

from __future__ import annotations

import json
from typing import Any

import pytest

from yuxi.db.dump import find_client_tools, schema_revision_is_known
from yuxi.errors import ArchiveInvalid, ArchiveUnsupported, BackupToolMissing
from yuxi.services.backup import (
    DATABASE_MEMBER,
    FORMAT_VERSION,
    ArchivedFile,
    Manifest,
    parse_manifest,
    workspace_member,
)

SHA = "a" * 64


def _manifest(**change: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        Manifest(
            yuxi_version="0.1.0",
            created_at="2026-12-05T00:00:00+00:00",
            postgresql={"server_version": "18.1", "server_version_num": 180001},
            schema_revision="0001",
            tables={"public.users": 1},
            users=["u1"],
            memory={},
            files=[
                ArchivedFile(DATABASE_MEMBER, 10, SHA),
                ArchivedFile(
                    workspace_member("u1", "agents/记忆.md"), 3, SHA, "u1", "agents/记忆.md"
                ),
            ],
        ).to_json()
    )
    data.update(change)
    return data


def _parse(data: dict[str, Any]) -> Manifest:
    return parse_manifest(json.dumps(data).encode())


def test_a_written_manifest_reads_back() -> None:
    manifest = _parse(_manifest())
    assert manifest.format_version == FORMAT_VERSION and manifest.users == ["u1"]
    assert [f.path for f in manifest.workspace_files()] == ["agents/记忆.md"]
    assert manifest.database.size == 10


@pytest.mark.parametrize(
    "files",
    [
        [{"member": DATABASE_MEMBER, "size": 1, "sha256": SHA}] * 2,  # listed twice
        [],  # no database dump
        [{"member": DATABASE_MEMBER, "size": -1, "sha256": SHA}],
        [{"member": DATABASE_MEMBER, "size": 1, "sha256": "xyz"}],
        [{"member": "yuxi-backup/other", "size": 1, "sha256": SHA}],
    ],
)
def test_bad_file_lists_are_refused(files: list[dict[str, Any]]) -> None:
    with pytest.raises(ArchiveInvalid):
        _parse(_manifest(files=files))


@pytest.mark.parametrize("path", ["../escape", "/etc/passwd", "a/../../b", "a\\b", ""])
def test_an_unsafe_workspace_path_is_refused(path: str) -> None:
    files = [
        {"member": DATABASE_MEMBER, "size": 1, "sha256": SHA},
        {
            "member": f"yuxi-backup/workspaces/x/{path}",
            "size": 1,
            "sha256": SHA,
            "uid": "u1",
            "path": path,
        },
    ]
    with pytest.raises(ArchiveInvalid):
        _parse(_manifest(files=files))


def test_a_member_elsewhere_than_its_path_belongs_is_refused() -> None:
    files = [
        {"member": DATABASE_MEMBER, "size": 1, "sha256": SHA},
        {
            "member": workspace_member("u2", "a.txt"),
            "size": 1,
            "sha256": SHA,
            "uid": "u1",
            "path": "a.txt",
        },
    ]
    with pytest.raises(ArchiveInvalid, match="belongs"):
        _parse(_manifest(files=files))


def test_a_newer_format_is_unsupported_and_garbage_is_invalid() -> None:
    with pytest.raises(ArchiveUnsupported, match="format version"):
        _parse(_manifest(format_version=FORMAT_VERSION + 1))
    with pytest.raises(ArchiveInvalid):
        parse_manifest(b"\xff not json")
    with pytest.raises(ArchiveInvalid, match="not a Yuxi backup"):
        _parse(_manifest(format="something-else"))
    with pytest.raises(ArchiveInvalid):
        _parse(_manifest(tables={"public.users": "many"}))


def test_schema_revisions_known_to_this_code() -> None:
    assert schema_revision_is_known("0001")
    assert not schema_revision_is_known("9999_from_the_future")


def test_no_client_tools_new_enough_names_what_to_install() -> None:
    """A server newer than every pg_dump found: refused with the package to install."""
    with pytest.raises(BackupToolMissing, match="postgresql-client-99"):
        find_client_tools(99, embedded=False)


def test_the_embedded_default_uses_the_wheels_own_tools() -> None:
    from yuxi.db.embedded_cluster import bindir

    tools = find_client_tools(18, embedded=True)
    assert tools.pg_dump.parent == bindir() and tools.major >= 18
