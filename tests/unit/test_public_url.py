"""Login links point where people can open the UI: ``YUXI_PUBLIC_URL`` when set, else this
server's own address, never a wildcard listen address; a public URL that cannot work (a path
prefix, another scheme) is refused when the settings load."""

from __future__ import annotations

import pytest

from yuxi.cli.users import login_url, public_base_url
from yuxi.errors import ConfigurationError
from yuxi.settings import Settings, load_settings

ANY = "0.0.0.0"  # noqa: S104 - a listen address the link must not name


@pytest.mark.parametrize(
    ("host", "port", "expected"),
    [
        ("127.0.0.1", 8000, "http://127.0.0.1:8000"),
        (ANY, 8000, "http://127.0.0.1:8000"),
        ("::", 8080, "http://[::1]:8080"),
        ("::1", 8080, "http://[::1]:8080"),
        ("yuxi.internal", 9000, "http://yuxi.internal:9000"),
    ],
)
def test_without_a_public_url_the_link_is_the_servers_own_address(
    host: str, port: int, expected: str
) -> None:
    assert public_base_url(Settings(host=host, port=port)) == expected
    # the command line's --host / --port win over the settings
    assert public_base_url(Settings(), host, port) == expected


def test_a_public_url_wins_and_is_normalised() -> None:
    settings = Settings(host=ANY, public_url=" https://yuxi.example.org/ ")
    assert settings.public_url == "https://yuxi.example.org"
    assert public_base_url(settings, ANY, 8000) == "https://yuxi.example.org"
    assert login_url(public_base_url(settings), "yl_x") == "https://yuxi.example.org/?login=yl_x"
    assert Settings(public_url="http://10.0.0.5:8443").public_url == "http://10.0.0.5:8443"
    assert Settings(public_url="  ").public_url is None


@pytest.mark.parametrize(
    "value",
    [
        "yuxi.example.org",  # no scheme
        "ftp://yuxi.example.org",
        "https://",
        "https://yuxi.example.org/yuxi",  # a path prefix: the UI calls /api/v1 at the root
        "https://yuxi.example.org/?a=1",
        "https://yuxi.example.org/#x",
        "https://user:pw@yuxi.example.org",
    ],
)
def test_a_public_url_that_cannot_work_is_refused_at_start_up(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("YUXI_PUBLIC_URL", value)
    with pytest.raises(ConfigurationError, match="public_url"):
        load_settings()
