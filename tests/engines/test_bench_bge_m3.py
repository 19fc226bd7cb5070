"""The BGE-M3 benchmark runs on the real ``BGEM3FlagModel``, and our SS path gives what FlagEmbedding's encode gives."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.timeout(600)
def test_the_benchmark_runs_and_our_similarities_equal_flagembeddings(
    tiny: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    bench_bge_m3 = importlib.import_module("bench_bge_m3")
    try:
        status = bench_bge_m3.main(["--copies", "1", "--rounds", "2", "--batch-size", "16", "--device", "cpu"])
    finally:
        sys.modules.pop("bench_bge_m3", None)
    out = capsys.readouterr().out
    assert status == 0, out
    assert "402 pairs (" in out and "on CPU" in out  # the demo's 402 responses against their references
    assert "SS equal (raw vs ours, every pair, to 1e-6): yes" in out
    assert len(re.findall(r"^batch 16 round \d \((raw then ours|ours then raw)\): raw [\d,]+ pairs/s", out, re.M)) == 2
    assert re.search(r"^batch 16 overall: raw [\d,]+ pairs/s, ours [\d,]+ pairs/s, ratio \d+\.\d{3}", out, re.M), out
