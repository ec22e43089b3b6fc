"""What a step of a run's record sends (``yuxi.repositories.runs.step_repository.StepWrites``):
the folding that stands in for what one statement's shared snapshot cannot see, and the shapes
a step statement refuses to build. Pure: no database (the statement itself is tested on
PostgreSQL in ``tests/integration/test_run_service.py``)."""

from __future__ import annotations

import pytest

from yuxi.repositories.runs.step_repository import StepShape, StepWrites, step_statement


def _proposed(writes: StepWrites, *ids: str) -> int:
    message = writes.message("assistant", "", "tool_call", None)
    for tool_call_id in ids:
        writes.new_call(message, tool_call_id, "read_workspace_file", {})
    return message


def test_a_call_finished_in_the_step_that_proposes_it_is_inserted_finished() -> None:
    writes = StepWrites()
    _proposed(writes, "c1", "c1")  # the same id twice: the newest row (the second) is finished
    writes.finish_call("c1", "success", "first", None)
    writes.finish_call("c1", "error", "last 完", "last 完")  # a later finish replaces an earlier
    shape, params = writes.parameters()
    assert [(c["status"], c["output"]) for c in params["new_calls"]] == [
        ("pending", None),
        ("error", "last 完"),
    ]
    assert not shape.finished_calls and "finished_calls" not in params


def test_a_step_that_closes_open_calls_inserts_its_own_closed_and_finishes_others() -> None:
    writes = StepWrites()
    _proposed(writes, "open", "done")
    writes.finish_call("done", "success", "ok", None)
    writes.finish_call("earlier", "success", "from an earlier run", None)
    writes.close_open_calls("run failed")
    shape, params = writes.parameters()
    by_id = {c["tool_call_id"]: (c["status"], c["output"]) for c in params["new_calls"]}
    assert by_id == {"open": ("error", "run failed"), "done": ("success", "ok")}
    # A call of an earlier run is finished in the statement (and kept out of its close there).
    assert [c["tool_call_id"] for c in params["finished_calls"]] == ["earlier"]
    assert shape == StepShape(messages=True, new_calls=True, finished_calls=True, closes_calls=True)


def test_the_parameters_leave_the_collected_writes_as_they_were() -> None:
    writes = StepWrites()
    _proposed(writes, "c1")
    writes.close_open_calls("run failed")
    writes.parameters()
    assert writes.new_calls[0]["status"] == "pending"  # folded in a copy: sending twice agrees


def test_an_end_needs_a_settled_status() -> None:
    with pytest.raises(ValueError, match="terminal"):
        StepWrites().settle("running", output=None, error_code=None, error_message=None)


@pytest.mark.parametrize(
    "shape",
    [StepShape(snapshot=True, finishes=True), StepShape(new_calls=True)],
)
def test_a_step_statement_refuses_a_shape_no_step_has(shape: StepShape) -> None:
    with pytest.raises(ValueError):
        step_statement(shape)
