"""The vLLM benchmark runs on the real engine, and our generate path writes exactly what ``LLM.chat`` returns."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.timeout(900)
def test_the_benchmark_runs_and_our_path_writes_what_llm_chat_returns(
    tiny: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    bench_vllm = importlib.import_module("bench_vllm")
    try:
        status = bench_vllm.main(["--model", str(tiny.chat), "--copies", "2", "--max-tokens", "48", "--rounds", "2"])
    finally:
        sys.modules.pop("bench_vllm", None)
    out = capsys.readouterr().out
    assert status == 0, out
    assert "134 prompts, max_tokens 48, 2 rounds" in out  # 2 copies of the 67 demo scenarios
    assert "texts equal (raw vs ours, every prompt, every round): yes" in out
    assert len(re.findall(r"^round \d \((raw then ours|ours then raw)\): raw [\d,]+ tok/s", out, re.M)) == 2
    assert re.search(r"^overall: raw [\d,]+ tok/s, ours [\d,]+ tok/s, ratio \d+\.\d{3}", out, re.M), out
