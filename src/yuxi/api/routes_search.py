"""The owner's search over their own threads: the thread list's search box."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from yuxi.api.deps import ServicesDep, UidDep
from yuxi.limits import SEARCH_MAX_ITEMS

router = APIRouter(prefix="/api/v1", tags=["threads"])


@router.get("/search")
async def search_own_messages(
    uid: UidDep,
    services: ServicesDep,
    q: str = Query(default="", description="words; a quoted phrase must appear as written"),
    limit: str = Query(default=str(SEARCH_MAX_ITEMS), description="1..10"),
) -> dict[str, Any]:
    """The caller's messages that hold a word of ``q``, best first: the history search's terms,
    ranking, neighbours and byte budgets (design.md §6.2), over every active thread of theirs,
    those hidden from recall included, whether memory is on or off. A query the search refuses
    (blank, over 256 characters, no word) or a limit outside 1..10 is 400 ``invalid_argument``
    with its reason, in the search's own words (both are checked by the service, once)."""
    result = await services.lookback.search_own_messages(uid=uid, query=q, limit=limit)
    return result.to_payload()
