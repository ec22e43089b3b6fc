"""``YUXI_TRASH_DAYS``: whole days from 0 (purged at once) to ``TRASH_DAYS_MAX``; anything else
stops the process at start-up with a configuration error naming the variable."""

from __future__ import annotations

import pytest

from yuxi.errors import ConfigurationError
from yuxi.limits import TRASH_DAYS, TRASH_DAYS_MAX
from yuxi.settings import Settings, load_settings


def test_the_default_is_thirty_days() -> None:
    assert Settings().trash_days == TRASH_DAYS == 30


@pytest.mark.parametrize("value", ["0", "1", str(TRASH_DAYS_MAX)])
def test_whole_days_up_to_the_bound_are_taken(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YUXI_TRASH_DAYS", value)
    assert load_settings().trash_days == int(value)


@pytest.mark.parametrize("value", ["-1", str(TRASH_DAYS_MAX + 1), "1.5", "thirty", ""])
def test_anything_else_is_a_configuration_error(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("YUXI_TRASH_DAYS", value)
    with pytest.raises(ConfigurationError, match="trash_days"):
        load_settings()
