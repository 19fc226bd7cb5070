"""The paper-size benchmark runs end to end at a tiny size (its figures are printed, never asserted)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    yield importlib.import_module("bench_paper_size")
    for name in ("bench_paper_size", "paper_store"):
        sys.modules.pop(name, None)


def test_a_tiny_paper_store_is_filled_and_every_figure_printed(
    bench: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--keep", str(tmp_path), "--scenarios", "60", "--models", "3", "--answers", "2000"]
    bench.main([*argv, "--annotators", "30", "--takers", "4", "--repeats", "1"])  # type: ignore[attr-defined]
    out = capsys.readouterr().out
    assert "filled: 60 scenarios, 360 responses, 360 scores" in out
    for row in ("next item", "submit", "Table 2 with intervals", "aggregate paper-vote", "aggregate paper-safety"):
        assert any(line.startswith(row) for line in out.splitlines()), (row, out)
    assert "submit failed" not in out
    bench.main([*argv, "--annotators", "30", "--takers", "2", "--repeats", "1"])  # type: ignore[attr-defined]
    assert "(reused)" in capsys.readouterr().out  # --keep: the second run reuses the filled store
