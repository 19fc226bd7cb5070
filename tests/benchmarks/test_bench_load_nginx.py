"""The load benchmark's nginx modes run (a tiny size; the figures are not checked, the integrity is): N processes
behind nginx for the three phases, and 1 vs 2 processes side by side."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.nginx_proxy import require_nginx
from tests.repo import REPO_ROOT
from tests.requirements import fresh_postgres_database

pytestmark = [pytest.mark.postgres, pytest.mark.serial]  # load runs, measured against the machine's CPU
TINY = ["--clients", "4", "--seconds", "2", "--rounds", "2", "--items", "40", "--people-per-item", "3"]


@pytest.fixture
def bench_load(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.syspath_prepend(str(REPO_ROOT / "benchmarks"))
    yield importlib.import_module("bench_load")
    for name in ("bench_load", "load_clients", "load_store", "load_faults", "load_proxy", "load_nginx", "load_team"):
        sys.modules.pop(name, None)


@pytest.fixture
def database() -> Iterator[str]:
    """A fresh PostgreSQL database (the benchmark migrates it); dropped afterwards."""
    require_nginx()
    with fresh_postgres_database("h2h_test_bench_") as url:
        yield url


def test_one_vs_two_processes_behind_nginx_reports_both_and_loses_nothing(
    bench_load: ModuleType, database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # More clients and longer slices than TINY: the proxy hashes each client's token to a process, so with 4 clients
    # all of them landed on one process in about one run of eight, and a 0.1 s slice held a single answer.
    wider = [*TINY, "--clients", "16", "--seconds", "6", "--items", "400"]
    status = bench_load.main([*wider, "--compare-processes", "--processes", "2", "--db", database])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "RESULT: OK (0 lost, 0 doubled, 0 over quota)" in out
    table = [line for line in out.splitlines() if line.startswith(("1-process ", "2-processes ")) and "vs" not in line]
    rows = {line.split()[0]: line for line in table}
    assert set(rows) == {"1-process", "2-processes"}
    assert all(int(row.split()[3]) > 0 for row in rows.values()), rows  # answers in both teams
    assert rows["2-processes"].count("127.0.0.1:") == 2  # both processes of the team answered
    ratio = next(line for line in out.splitlines() if line.startswith("2-processes vs 1-process"))
    assert len(ratio.split("per round:")[1].split()) == 2  # one ratio per round


def test_two_processes_behind_nginx_run_every_phase(
    bench_load: ModuleType, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fast = ["--pause-min", "0.05", "--pause-max", "0.1"]
    status = bench_load.main([*TINY, *fast, "--processes", "2", "--behind-nginx", "--db", database])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "RESULT: OK (0 lost, 0 doubled)" in out
    for phase in ("paced", "flat-out", "noop"):
        row = next(line for line in out.splitlines() if line.startswith(phase + " "))
        assert int(row.split()[3]) > 0, row
