"""``h2h export stops`` (issue 21): the stops of a campaign whose workflow stops items early, one row each, in the
format the output's suffix names; the rule in words on stderr; an unknown campaign is a clear error."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine

from studio.commands.export import COMMANDS
from studio.db import write_session
from studio.results.export_formats import read_table
from studio.services.answers import submit_answer
from studio.services.auth import hash_password
from studio.services.campaigns import TargetSelection, create_campaign
from studio.services.queue import next_item
from studio.workflows import WorkflowSchema, load_schemas
from tests.studio.helpers import add_people

VOTE = {"verdict": "keep", "subtask_label": "dialogue_base"}


def stopped_campaign(engine: Engine) -> None:
    """Campaign ``stop`` (crowd_vote with ``stopping: {rule: curtail}``, quota 5): three people vote alike on every
    item, so each item stops at its third vote."""
    schema = load_schemas()["crowd_vote"]
    stopping = WorkflowSchema.model_validate({**schema.model_dump(mode="json"), "stopping": {"rule": "curtail"}})
    with write_session(engine) as session:
        create_campaign(
            session,
            name="stop",
            schema=stopping,
            people_per_item=5,
            selection=TargetSelection(subtasks=["dialogue_base", "itinerary_basic"]),
        )
    for person in add_people(engine, hash_password("pw"), ["a", "b", "c"], "annotator"):
        while True:
            with write_session(engine) as session:
                view = next_item(session, campaign="stop", user=person)
                if view is None:
                    break
                submit_answer(
                    session,
                    campaign="stop",
                    user=person,
                    item_id=view.item_id,
                    lease_id=view.lease_id,
                    submission_id=f"{person.id}-{view.item_id}",
                    answers=VOTE,
                )


def export(db_url: str, *args: str) -> Result:
    (group,) = COMMANDS
    return CliRunner().invoke(group, ["stops", *args, "--db", db_url], catch_exceptions=False)


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "parquet"])
def test_export_stops_writes_one_row_per_stop(corpus: Engine, db_url: str, tmp_path: Path, suffix: str) -> None:
    stopped_campaign(corpus)
    target = tmp_path / f"stops.{suffix}"
    done = export(db_url, "--campaign", "stop", "-o", str(target))
    assert done.exit_code == 0, done.output
    assert "Stopping (curtail)" in done.stderr and "wrote 3 stop rows" in done.stdout
    rows = read_table(target)
    assert list(rows.columns) == ["item", "scenario", "votes_at_stop", "rule", "probability", "stopped_at"]
    assert len(rows) == 3 and set(rows["rule"]) == {"curtail"}
    assert [int(votes) for votes in rows["votes_at_stop"]] == [3, 3, 3]
    assert {float(value) for value in rows["probability"]} == {1.0}
    assert all(datetime.fromisoformat(str(at)).tzinfo is not None and "T" in str(at) for at in rows["stopped_at"])


def test_export_stops_to_stdout_and_an_unknown_campaign(corpus: Engine, db_url: str) -> None:
    stopped_campaign(corpus)
    done = export(db_url, "--campaign", "stop")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.exit_code == 0 and len(lines) == 3 and {line["votes_at_stop"] for line in lines} == {3}
    assert all("T" in line["stopped_at"] and datetime.fromisoformat(line["stopped_at"]).tzinfo for line in lines)
    unknown = export(db_url, "--campaign", "nope")
    assert unknown.exit_code != 0 and "nope" in unknown.output
