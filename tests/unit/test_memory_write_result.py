"""``MemoryWriteResult.to_payload`` is spelled out (no ``dataclasses.asdict``): it must still
carry every field, so a field added later cannot silently miss the model."""

from __future__ import annotations

from dataclasses import asdict, fields

from yuxi.services.memory.service import MemoryWriteResult, QuotaRemaining


def test_the_payload_carries_every_field() -> None:
    result = MemoryWriteResult(
        "updated", "/memory/MEMORY.md", 2_114, 40, 40, QuotaRemaining(4, 8_113), "mv_" + "a" * 32
    )
    assert {f.name for f in fields(result)} == set(result.to_payload())
    assert result.to_payload() == asdict(result)


def test_unset_optional_fields_are_left_out() -> None:
    result = MemoryWriteResult("unchanged", "/memory/MEMORY.md", 0, 1, 1)
    expected = {k: v for k, v in asdict(result).items() if v is not None}
    assert result.to_payload() == expected
    assert "quota_remaining" not in expected and "version_id" not in expected
