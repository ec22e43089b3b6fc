"""The README's settings table names every setting, with the default the code uses."""

from __future__ import annotations

import re
from pathlib import Path

from yuxi.settings import Settings

README = Path(__file__).resolve().parents[2] / "README.md"


def _settings_rows() -> dict[str, str]:
    text = README.read_text("utf-8")
    section = text.split("## Settings", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`YUXI_"):
            continue
        names = re.findall(r"`YUXI_([A-Z_]+)`", cells[0])
        defaults = [d.strip() for d in cells[1].split(" / ")]
        for i, name in enumerate(names):
            rows[name.lower()] = defaults[i] if len(defaults) == len(names) else cells[1]
    return rows


def test_every_setting_is_in_the_readme_with_its_default() -> None:
    rows = _settings_rows()
    assert set(rows) == set(Settings.model_fields)
    defaults = Settings.model_construct()
    for name, documented in rows.items():
        value = getattr(defaults, name)
        if value is None:
            assert documented.startswith("unset"), name
            continue
        expected = f"{value:g}" if isinstance(value, float) else str(value)
        assert documented.strip("`") == expected, (name, documented, expected)
