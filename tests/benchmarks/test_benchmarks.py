"""The benchmarks themselves run: the load benchmark (a small served studio, every phase, the integrity check against
the store) and the aggregation lock benchmark."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def benchmark_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], ModuleType]]:
    """``load(name)``: the script ``benchmarks/<name>.py`` imported as a module (the folder is not a package)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    yield importlib.import_module
    for name in ("bench_load", "load_clients", "load_store", "bench_aggregate"):
        sys.modules.pop(name, None)


@pytest.mark.serial  # a load test: 4 client threads and a server flat out, measured against the machine's CPU
def test_a_small_run_reports_every_phase_and_finds_nothing_lost(
    benchmark_module: Callable[[str], ModuleType], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = benchmark_module("bench_load").main(
        [
            "--clients",
            "4",
            "--seconds",
            "2",
            "--rounds",
            "2",
            "--items",
            "40",
            "--people-per-item",
            "3",
            "--pause-min",
            "0.05",
            "--pause-max",
            "0.1",
            "--work-dir",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert "RESULT: OK (0 lost, 0 doubled)" in out
    rounds = next(line for line in out.splitlines() if "per round" in line)
    assert len(rounds.split(":", 1)[1].split()) == 2  # one ratio per round
    for phase in ("paced", "flat-out", "noop"):
        row = next(line for line in out.splitlines() if line.startswith(phase + " "))
        assert int(row.split()[3]) > 0, row  # cycles completed


def test_slices_pool_into_one_phase(benchmark_module: Callable[[str], ModuleType]) -> None:
    bench_load = benchmark_module("bench_load")
    PhaseResult = benchmark_module("load_clients").PhaseResult  # noqa: N806 - the class

    first = PhaseResult(
        name="noop",
        clients=2,
        seconds=1.0,
        cycles=10,
        requests=30,
        cycle_ms=[1.0],
        generator_cpu_s=0.5,
        server_cpu_s=0.25,
        machine_busy_s=1.0,
    )
    second = PhaseResult(
        name="noop",
        clients=2,
        seconds=3.0,
        cycles=20,
        requests=60,
        cycle_ms=[2.0, 3.0],
        generator_cpu_s=0.5,
        server_cpu_s=None,
        machine_busy_s=2.0,
    )
    merged = bench_load.merge_phases("noop", [first, second])
    assert (merged.seconds, merged.cycles, merged.requests, merged.cycle_ms) == (4.0, 30, 90, [1.0, 2.0, 3.0])
    assert merged.cycles_per_s == 7.5 and merged.generator_cpu_s == 1.0 and merged.machine_busy_s == 3.0
    assert merged.server_cpu_s is None and merged.slices == [first, second]


@pytest.mark.serial  # compares two timings of one run
def test_the_aggregation_benchmark_times_both_ways_from_the_same_state(
    benchmark_module: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    benchmark_module("bench_aggregate").main(["--items", "30", "--raters", "3", "--repeats", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("30 items x 3 answers = 90 answers")
    one, split = (next(line for line in lines if line.startswith(name)) for name in ("one session", "read, then"))
    whole, held = (float(part.split()[0]) for part in split.split("whole run")[1].split("write lock held"))
    assert held <= whole and "write lock held" in one
