"""Metrics and logs without a server: one registry per :class:`Metrics`, closed label sets, the
scrape's database numbers, the open-stream gauge, JSON log lines with the run's ids and
credentials redacted."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import AsyncIterator

import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from yuxi.api.access_log import redact_credentials
from yuxi.observability.logs import (
    JsonFormatter,
    RunContextFilter,
    bind_run,
    configure_logging,
    current_run,
)
from yuxi.observability.metrics import Metrics, exposition, track_open
from yuxi.vocabulary import RUN_STATUSES

TOKEN = "yx_" + "A" * 43  # shaped like a Yuxi token


def _samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text.decode("utf-8")):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


# -- metrics -----------------------------------------------------------------------------------


def test_every_metrics_object_has_its_own_registry_and_nothing_is_global() -> None:
    first, second = Metrics(), Metrics(process=True)  # no "duplicated timeseries" error
    first.memory_write("updated")
    assert _samples(exposition(first, {}))[("yuxi_memory_writes_total", (("result", "updated"),))]
    assert (
        _samples(exposition(second, {}))[("yuxi_memory_writes_total", (("result", "updated"),))]
        == 0
    )
    assert not [name for name in REGISTRY._names_to_collectors if name.startswith("yuxi_")]
    assert any(name.startswith("process_") for name, _ in _samples(exposition(second, {})))


def test_label_values_come_from_closed_sets_only() -> None:
    metrics = Metrics()
    with pytest.raises(ValueError):
        metrics.run_finished("a user's text", 1.0)
    with pytest.raises(ValueError):
        metrics.history_call("/etc/passwd", 0.1)
    with pytest.raises(ValueError):
        metrics.reconciled("thread-123")
    for _ in range(2):  # the second time through the resolved series
        metrics.memory_write("memory_quota_exceeded")  # a real error code
        metrics.memory_write("remember: my secret")  # never a label: counted as the generic code
    samples = _samples(exposition(metrics, {}))
    assert samples[("yuxi_memory_writes_total", (("result", "memory_quota_exceeded"),))] == 2
    assert samples[("yuxi_memory_writes_total", (("result", "error"),))] == 2
    assert not any("secret" in value for _, labels in samples for _, value in labels)


def test_a_scrape_reports_every_run_status_from_the_database_counts() -> None:
    metrics = Metrics()
    metrics.run_finished("completed", 2.0)
    metrics.time_to_first_token.observe(0.3)
    samples = _samples(exposition(metrics, {"pending": 3, "completed": 7}))
    assert samples[("yuxi_database_up", ())] == 1
    for status in RUN_STATUSES:
        expected = {"pending": 3, "completed": 7}.get(status, 0)
        assert samples[("yuxi_runs", (("status", status),))] == expected
    assert samples[("yuxi_run_duration_seconds_count", (("status", "completed"),))] == 1
    assert samples[("yuxi_run_duration_seconds_bucket", (("le", "2.5"), ("status", "completed")))]
    assert samples[("yuxi_run_time_to_first_token_seconds_count", ())] == 1
    down = _samples(exposition(metrics, None))
    assert down[("yuxi_database_up", ())] == 0
    assert not [name for name, _ in down if name == "yuxi_runs"]


async def test_the_open_stream_gauge_follows_a_stream_to_its_end_close_or_cancel() -> None:
    metrics = Metrics()
    gauge = metrics.sse_streams_open
    closed: list[str] = []

    async def source(n: int | None) -> AsyncIterator[int]:
        try:
            i = 0
            while n is None or i < n:
                yield i
                i += 1
                await asyncio.sleep(0)
        finally:
            closed.append("closed")

    def value() -> float:
        return _samples(exposition(metrics, {}))[("yuxi_sse_streams_open", ())]

    assert [i async for i in track_open(gauge, source(3))] == [0, 1, 2]
    assert value() == 0 and closed == ["closed"]

    stream = track_open(gauge, source(None))
    assert await anext(stream) == 0
    assert value() == 1
    await stream.aclose()  # the client went away between events
    assert value() == 0 and closed == ["closed", "closed"]

    # cancelled while the stream waits for its next event (sse-starlette cancels the task that
    # iterates when the client disconnects, and closes the iterator itself when a send fails)
    started = asyncio.Event()

    async def waiting() -> AsyncIterator[int]:
        try:
            yield 0
            await asyncio.sleep(3600)
            yield 1
        finally:
            closed.append("closed")

    async def consume() -> None:
        async for _ in track_open(gauge, waiting()):
            started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    await asyncio.sleep(0)
    assert value() == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert value() == 0 and len(closed) == 3


# -- logs --------------------------------------------------------------------------------------


def _logger(buffer: io.StringIO) -> logging.Logger:
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(JsonFormatter(redact_credentials))
    handler.addFilter(RunContextFilter())
    logger = logging.getLogger(f"yuxi.test.{id(buffer)}")
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger


async def test_a_runs_lines_carry_its_ids_and_no_other_task_gets_them() -> None:
    buffer = io.StringIO()
    log = _logger(buffer)

    async def a_run() -> None:
        bind_run("run-1", "thread-1")
        log.info("inside")
        await asyncio.sleep(0)
        log.warning("still inside")

    await asyncio.create_task(a_run())
    log.info("outside")
    assert current_run() is None  # the binding ended with the run's task
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert [line["message"] for line in lines] == ["inside", "still inside", "outside"]
    for line in lines[:2]:
        assert (line["run_id"], line["thread_id"]) == ("run-1", "thread-1")
    assert "run_id" not in lines[2] and "thread_id" not in lines[2]
    assert {"ts", "level", "logger", "message"} <= set(lines[0])
    assert lines[1]["level"] == "warning"


def test_json_lines_redact_credentials_in_messages_arguments_and_tracebacks() -> None:
    buffer = io.StringIO()
    log = _logger(buffer)
    log.info('"GET /?token=%s HTTP/1.1" 200', "plain-secret-value")
    log.info("a token in passing: %s", TOKEN)
    try:
        raise RuntimeError(f"failed with {TOKEN}")
    except RuntimeError:
        log.exception("boom")
    text = buffer.getvalue()
    assert TOKEN not in text and "plain-secret-value" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == 3
    assert "REDACTED" in lines[0]["message"] and "REDACTED" in lines[1]["message"]
    assert "RuntimeError" in lines[2]["exception"] and "REDACTED" in lines[2]["exception"]


def test_configure_logging_json_replaces_the_root_handler_and_text_changes_nothing() -> None:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        marker = logging.NullHandler()
        root.handlers = [marker]
        assert configure_logging("text") is False
        assert root.handlers == [marker]
        assert configure_logging("json", redact=redact_credentials) is True
        (handler,) = root.handlers
        assert isinstance(handler.formatter, JsonFormatter)
        assert any(isinstance(f, RunContextFilter) for f in handler.filters)
        assert root.level == logging.INFO
        assert logging.getLogger("uvicorn.access").propagate
        with pytest.raises(ValueError):
            configure_logging("xml")
    finally:
        root.handlers, _ = saved
        root.setLevel(saved[1])
