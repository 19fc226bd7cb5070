"""``h2h ingest --no-progress`` (issue 17 item 5): ingesting draws its bars on stderr unless told not to."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from studio.commands.store import ingest
from studio.db import create_db_engine, upgrade_db, write_session
from studio.services.ingest import ingest_scenarios
from tests.pipeline.conftest import make_scenarios
from tests.studio.helpers import write_run

#: What every tqdm bar draws: the percentage and the bar's left edge.
BAR = "%|"


def test_ingest_without_progress_writes_no_bar(tmp_path: Path) -> None:
    stderr = {}
    for progress in (True, False):
        url = f"sqlite:///{tmp_path / f'store-{progress}.sqlite'}"
        upgrade_db(url)
        run = write_run(tmp_path / f"run-{progress}")
        options = ["--run", str(run.root), "--db", url] + ([] if progress else ["--no-progress"])
        result = CliRunner().invoke(ingest, options)
        assert result.exit_code == 0, result.output
        stderr[progress] = result.stderr
    assert BAR in stderr[True] and "scenarios" in stderr[True]
    assert BAR not in stderr[False], stderr[False]


def test_ingest_scenarios_without_progress_writes_no_bar(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    upgrade_db(url)
    engine = create_db_engine(url)
    stderr = {}
    for progress, scenarios in ((True, make_scenarios(3)), (False, make_scenarios(6)[3:])):
        capfd.readouterr()
        with write_session(engine) as session:
            report = ingest_scenarios(session, scenarios, actor="test", progress=progress)
        stderr[progress] = capfd.readouterr().err
        assert report.scenarios_added == 3
    engine.dispose()
    assert BAR in stderr[True] and BAR not in stderr[False], stderr
