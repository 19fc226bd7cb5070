"""benchmarks/bench_commands.py runs end to end at a tiny size and prints every figure it promises (the figures
themselves are never checked: they are measurements, benchmarks/README.md)."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_a_tiny_run_prints_start_up_agreement_and_score_pairs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    try:
        status = importlib.import_module("bench_commands").main(
            ["--items", "30", "--raters", "4", "--pairs", "40", "--repeats", "1"]
        )
    finally:
        for name in ("bench_commands", "bench_agreement", "bench_lexical"):
            sys.modules.pop(name, None)
    out = capsys.readouterr().out
    assert status == 0
    for command in ("h2h --help", "h2h agreement --help", "h2h score-pairs --help"):
        assert re.search(rf"^  {re.escape(command)} +\d+ ms / +\d+ ms   \S", out, re.MULTILINE), out
    assert "h2h agreement --level nominal, 120 answers (30 items x 4 raters):" in out
    assert re.search(
        r"wall: whole command \d+\.\d+ s; net of start-up: -?\d+\.\d+ s \(minus h2h agreement --help\)", out
    )
    assert "h2h score-pairs --embedder none, 40 Chinese pairs" in out
    assert re.search(r"CPU: whole command .* naive / whole: \d+\.\dx", out), out
