"""The container files, checked without docker (issue 13): ``Dockerfile`` and ``compose.yaml``
run only ``yuxi`` commands and options that exist, as a user that is not root, with the data
directory as a volume shared by the API and the worker, on PostgreSQL 17 or newer, and set only
``YUXI_*`` variables that are real settings (with valid values where they are literal). The image
installs the serve lock, and the one version (pyproject.toml's) is what ``yuxi --version`` and
``/healthz`` show."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer.main
import yaml
from typer.testing import CliRunner

import yuxi
from yuxi.api.app import create_app
from yuxi.bootstrap import bootstrap
from yuxi.cli import app
from yuxi.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "compose.yaml"
DOCKERIGNORE = ROOT / ".dockerignore"


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` pairs: comments dropped, continuation lines joined."""
    joined = re.sub(
        r"\\\n",
        " ",
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")),
    )
    found = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def _exec_form(arguments: str) -> list[str]:
    value = json.loads(arguments)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), arguments
    return value


def _env_pairs(arguments: str) -> dict[str, str]:
    """``ENV A=1 B=2`` (the ``key=value`` form, which is all the Dockerfile uses)."""
    pairs = dict(part.split("=", 1) for part in shlex.split(arguments))
    assert pairs, arguments
    return pairs


def check_yuxi_command(argv: list[str]) -> None:
    """``argv`` is a ``yuxi`` command line the CLI accepts: the command exists, takes each
    option given, and every value passes its option's checks. Nothing runs: ``--help`` proves
    the command and its options, and click parses the values without invoking the command."""
    assert argv and argv[0] == "yuxi", argv
    result = CliRunner().invoke(app, [*argv[1:], "--help"])
    assert result.exit_code == 0, (argv, result.output)
    assert "Usage: " in result.output, argv
    command: Any = typer.main.get_command(app)
    words = argv[1:]
    while getattr(command, "commands", None):
        command = command.commands[words.pop(0)]
    try:
        command.make_context(argv[0], list(words))
    except Exception as exc:  # typer's own click raises its BadParameter / NoSuchOption
        raise AssertionError(f"{argv}: {exc}") from exc


def check_yuxi_env(env: dict[str, str]) -> None:
    """Every ``YUXI_*`` name is a setting; literal values (not ``${…}``) validate."""
    literal = {}
    for name, value in env.items():
        if not name.startswith("YUXI_"):
            continue
        field = name.removeprefix("YUXI_").lower()
        assert field in Settings.model_fields, f"{name} is not a Yuxi setting"
        if "${" not in str(value):
            literal[field] = value
    Settings.model_validate(literal)


def _compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text("utf-8"))
    assert isinstance(data, dict)
    return data


def _services() -> dict[str, dict[str, Any]]:
    services = _compose()["services"]
    assert isinstance(services, dict)
    return services


# -- the checks can fail ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["yuxi", "nonsense"],
        ["yuxi", "serve", "--no-such-option", "1"],
        ["yuxi", "worker", "--count", "0"],
        ["yuxi", "db", "migrate"],
        ["python", "-m", "yuxi"],
    ],
)
def test_a_command_that_does_not_exist_is_caught(argv: list[str]) -> None:
    with pytest.raises(AssertionError):
        check_yuxi_command(argv)


@pytest.mark.parametrize(
    "env", [{"YUXI_NO_SUCH_SETTING": "1"}, {"YUXI_WORKERS": "many"}, {"YUXI_LOG_FORMAT": "xml"}]
)
def test_an_unknown_setting_or_a_bad_value_is_caught(env: dict[str, str]) -> None:
    with pytest.raises(Exception):  # noqa: B017 - an AssertionError or a ValidationError
        check_yuxi_env(env)


def test_the_dockerfile_parser_sees_continuations_and_comments() -> None:
    parsed = dockerfile_instructions("# c\nFROM x\nRUN a \\\n    && b\nUSER 0\n")
    assert parsed == [("FROM", "x"), ("RUN", "a      && b"), ("USER", "0")]


# -- Dockerfile --------------------------------------------------------------------------------


def test_the_dockerfile_runs_yuxi_serve_as_a_user_that_is_not_root() -> None:
    steps = dockerfile_instructions(DOCKERFILE.read_text("utf-8"))
    assert steps[0][0] == "FROM" and steps[0][1].startswith("python:3.12")
    users = [args for word, args in steps if word == "USER"]
    assert users, "no USER: the image would run as root"
    assert users[-1].split(":")[0] not in ("root", "0")
    cmd = [args for word, args in steps if word == "CMD"]
    assert len(cmd) == 1
    assert _exec_form(cmd[0])[:2] == ["yuxi", "serve"]
    check_yuxi_command(_exec_form(cmd[0]))
    # USER comes before CMD and after every RUN (nothing later runs as root by accident)
    order = [word for word, _ in steps]
    assert order.index("CMD") > len(order) - 1 - order[::-1].index("USER")
    assert max(i for i, w in enumerate(order) if w == "RUN") < order.index("USER")


def test_the_dockerfile_declares_the_data_dir_as_a_volume_and_sets_real_settings() -> None:
    steps = dockerfile_instructions(DOCKERFILE.read_text("utf-8"))
    env: dict[str, str] = {}
    for word, args in steps:
        if word == "ENV":
            env |= _env_pairs(args)
    check_yuxi_env(env)
    volumes = [v for word, args in steps if word == "VOLUME" for v in _exec_form(args)]
    assert env["YUXI_DATA_DIR"] in volumes
    exposed = [args for word, args in steps if word == "EXPOSE"]
    assert exposed == [env["YUXI_PORT"]]
    # what the build copies exists and is not left out of the build context
    copied = [args.split()[:-1] for word, args in steps if word == "COPY"]
    ignored = DOCKERIGNORE.read_text("utf-8").split()
    for source in (s for sources in copied for s in sources):
        assert (ROOT / source).exists(), source
        assert source not in ignored, source
    assert {".git", ".venv", "tests"} <= set(ignored)


def test_the_image_installs_the_serve_lock_then_the_project_alone() -> None:
    steps = dockerfile_instructions(DOCKERFILE.read_text("utf-8"))
    installs = [args for word, args in steps if word == "RUN" and "pip install" in args]
    assert installs[0] == "pip install --require-hashes -r requirements/serve.txt"
    assert installs[1].startswith("pip install --no-deps --no-build-isolation . ")
    assert len(installs) == 2
    copies = [args for word, args in steps if word == "COPY"]
    assert copies[0] == "requirements/serve.txt ./requirements/serve.txt"
    # the lock is copied and installed before the source, so its layer outlives a code change
    order = [(word, args) for word, args in steps if word in ("COPY", "RUN")]
    assert order.index(("RUN", installs[0])) < order.index(("COPY", "src ./src"))


# -- the version -------------------------------------------------------------------------------


def _pyproject_version() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    assert "version" not in project.get("dynamic", [])
    value = project["version"]
    assert isinstance(value, str)
    return value


def test_the_version_is_written_once_in_pyproject() -> None:
    written = _pyproject_version()
    assert yuxi.__version__ == version("yuxi") == written
    literal = re.compile(rf"""["']{re.escape(written)}["']""")
    copies = [p for p in (ROOT / "src").rglob("*.py") if literal.search(p.read_text("utf-8"))]
    assert copies == []


def test_yuxi_version_prints_the_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"yuxi {_pyproject_version()}\n"


async def test_healthz_shows_the_version_without_asking_the_database(tmp_path: Path) -> None:
    # nothing listens on port 1: a request that asked the database would fail
    container = await bootstrap(
        Settings(database_url="postgresql://yuxi@127.0.0.1:1/yuxi", data_dir=tmp_path / "data")
    )
    transport = httpx.ASGITransport(app=create_app(container, workers=0))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            health = await client.get("/healthz")
            assert health.status_code == 200
            assert health.json() == {"status": "ok", "version": _pyproject_version()}
            assert (await client.get("/readyz")).status_code == 503
            schema = (await client.get("/openapi.json")).json()
            assert schema["info"]["version"] == _pyproject_version()
    finally:
        await container.aclose()


# -- compose.yaml ------------------------------------------------------------------------------


def test_compose_runs_postgres_17_or_newer_with_a_volume_and_a_health_check() -> None:
    postgres = _services()["postgres"]
    image = str(postgres["image"])
    name, _, tag = image.partition(":")
    assert name == "postgres"
    major = re.match(r"(\d+)", tag)
    assert major is not None and int(major.group(1)) >= 17, image
    assert any(str(v).endswith(":/var/lib/postgresql/data") for v in postgres["volumes"])
    assert "healthcheck" in postgres


def test_every_yuxi_command_in_compose_exists() -> None:
    commands = {
        name: service["command"] for name, service in _services().items() if "command" in service
    }
    assert commands["migrate"] == ["yuxi", "db", "upgrade"]
    assert commands["api"][:2] == ["yuxi", "serve"]
    assert commands["worker"][:2] == ["yuxi", "worker"]
    for argv in commands.values():
        assert isinstance(argv, list), "exec form only: no shell in between"
        check_yuxi_command([str(a) for a in argv])


def test_compose_sets_only_real_settings() -> None:
    checked = 0
    for service in _services().values():
        env = service.get("environment") or {}
        assert isinstance(env, dict)
        if any(name.startswith("YUXI_") for name in env):
            check_yuxi_env({str(k): str(v) for k, v in env.items()})
            checked += 1
    assert checked >= 3  # migrate, api, worker


def test_the_api_and_the_worker_share_the_data_volume_after_migrations() -> None:
    services = _services()
    declared = _compose()["volumes"]
    mounts = {}
    for name in ("migrate", "api", "worker"):
        service = services[name]
        data_dir = service["environment"]["YUXI_DATA_DIR"]
        volume = [str(v).split(":") for v in service["volumes"]]
        named = [src for src, target, *_ in volume if target == data_dir]
        assert len(named) == 1, (name, volume)
        assert named[0] in declared  # a named volume, not a bind mount of the host
        mounts[name] = named[0]
        assert service["environment"]["YUXI_DATABASE_URL"].endswith("@postgres:5432/yuxi")
    assert len(set(mounts.values())) == 1
    for name in ("api", "worker"):
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "/readyz" in " ".join(services["api"]["healthcheck"]["test"])
