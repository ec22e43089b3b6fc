"""Whole-database and whole-directory scans, for tests that prove something is gone.

:func:`scan_database` reads every row of every table of every non-system schema (found in
``information_schema``, so a table added later is scanned too): each row as its text form, and
each ``bytea`` column's raw bytes as well (LangGraph's ``checkpoint_blobs`` hold msgpack, in
which a string is its plain UTF-8 bytes). :func:`dump_tables` gives each table's rows as text and
as JSON, for before/after comparisons.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql


@dataclass
class Scan:
    tables: int = 0
    rows: int = 0
    #: (table, needle) → rows that contain it.
    hits: Counter[tuple[str, str]] = field(default_factory=Counter)

    def tables_with(self, needle: str) -> set[str]:
        return {table for (table, n), count in self.hits.items() if n == needle and count}


def _tables(conn: psycopg.Connection[Any]) -> list[tuple[str, str, list[str]]]:
    rows = conn.execute(
        "SELECT t.table_schema, t.table_name,"
        " coalesce(array_agg(c.column_name::text ORDER BY c.ordinal_position)"
        "   FILTER (WHERE c.data_type = 'bytea'), '{}')"
        " FROM information_schema.tables t"
        " LEFT JOIN information_schema.columns c"
        "   ON c.table_schema = t.table_schema AND c.table_name = t.table_name"
        " WHERE t.table_type = 'BASE TABLE'"
        "   AND t.table_schema NOT IN ('pg_catalog', 'information_schema')"
        "   AND t.table_schema NOT LIKE 'pg_toast%'"
        " GROUP BY t.table_schema, t.table_name ORDER BY 1, 2"
    ).fetchall()
    return [(r[0], r[1], list(r[2])) for r in rows]


def scan_database(url: str, needles: list[str]) -> Scan:
    """Every row of every table, searched (case-insensitively) for each needle."""
    wanted = [(n, n.lower().encode()) for n in needles]
    scan = Scan()
    with psycopg.connect(url) as conn:
        for schema, table, binary in _tables(conn):
            scan.tables += 1
            name = f"{schema}.{table}" if schema != "public" else table
            columns = [sql.SQL("t::text")] + [sql.Identifier(c) for c in binary]
            query = sql.SQL("SELECT {} FROM {}.{} t").format(
                sql.SQL(", ").join(columns), sql.Identifier(schema), sql.Identifier(table)
            )
            for row in conn.execute(query):
                scan.rows += 1
                haystack = str(row[0]).lower().encode()
                raw = [bytes(v).lower() for v in row[1:] if v is not None]
                for needle, encoded in wanted:
                    if encoded in haystack or any(encoded in r for r in raw):
                        scan.hits[(name, needle)] += 1
    return scan


def dump_tables(url: str) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Each table's rows as (text form, JSON object), sorted by the text form."""
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    with psycopg.connect(url) as conn:
        for schema, table, _ in _tables(conn):
            name = f"{schema}.{table}" if schema != "public" else table
            query = sql.SQL("SELECT t::text, to_jsonb(t) FROM {}.{} t").format(
                sql.Identifier(schema), sql.Identifier(table)
            )
            out[name] = sorted(
                ((str(r[0]), dict(r[1])) for r in conn.execute(query)), key=lambda r: r[0]
            )
    return out


def file_hashes(top: Path) -> dict[str, str]:
    """Every file under ``top`` (never following links) → its sha256."""
    hashes: dict[str, str] = {}
    for folder, _, files in os.walk(top, followlinks=False):
        for name in files:
            path = Path(folder) / name
            if path.is_symlink():
                hashes[str(path.relative_to(top))] = "symlink:" + os.readlink(path)
                continue
            hashes[str(path.relative_to(top))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def scan_files(top: Path, needles: list[str]) -> list[tuple[str, str]]:
    """(path, needle) for every file under ``top`` whose name or content holds a needle."""
    found: list[tuple[str, str]] = []
    for folder, dirs, files in os.walk(top, followlinks=False):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            content = b"" if path.is_dir() or path.is_symlink() else path.read_bytes().lower()
            for needle in needles:
                low = needle.lower()
                if low in str(path.relative_to(top)).lower() or low.encode() in content:
                    found.append((str(path.relative_to(top)), needle))
    return found
