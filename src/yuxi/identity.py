"""The trusted identity of one agent run: one type from the claim to the memory lock.

A :class:`RunIdentity` is built by the run service from the row a worker has just claimed (its
lease), validated once here, and then passed unchanged: to the executor, into LangGraph as the
run ``context`` (``context_schema``), to every tool through ``ToolRuntime.context``, and to the
memory write gate (``uow.memory_gate``, ``MemoryGate``), which checks it against the row
under ``FOR UPDATE``.

``worker_id`` is the lease token of the claiming worker. It is ``None`` for a SubAgent's run:
SubAgents hold no lease, so every tool that needs a live, leased run refuses them (fail closed).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from yuxi.errors import UnauthorizedRun
from yuxi.limits import IDENTITY_VALUE_MAX_CHARS

__all__ = ["RunIdentity"]


def _valid(value: object) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= IDENTITY_VALUE_MAX_CHARS
        and value.isprintable()
        and not any(0xD800 <= ord(ch) <= 0xDFFF for ch in value)
    )


@dataclass(frozen=True, slots=True)
class RunIdentity:
    """uid, thread, run, request and (for a top-level run) the lease token of its worker.

    Construction validates every value (a non-empty printable string of at most
    ``IDENTITY_VALUE_MAX_CHARS`` characters: no NUL, no control character, no lone surrogate)
    and raises :class:`~yuxi.errors.UnauthorizedRun` otherwise, so an instance is always
    well-formed and nothing downstream re-checks the values.
    """

    uid: str
    thread_id: str
    run_id: str
    request_id: str
    worker_id: str | None

    def __post_init__(self) -> None:
        bad = [
            f.name
            for f in fields(self)
            if not (f.name == "worker_id" and self.worker_id is None)
            and not _valid(getattr(self, f.name))
        ]
        if bad:
            raise UnauthorizedRun(f"no trusted run identity ({', '.join(bad)} missing or invalid)")

    @property
    def holds_lease(self) -> bool:
        """True for a top-level run claimed by a worker; False for a SubAgent's run."""
        return self.worker_id is not None
