"""BGE-M3 for real: FlagEmbedding's ``BGEM3FlagModel`` loads the tiny XLM-RoBERTa from a local directory through
``--embedder-model`` / ``H2H_BGE_M3_MODEL``; SS equals an independent transformers computation on the same weights,
and the score signature names the model that was loaded."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.records import Score
from pipeline.rundir import RunDir
from pipeline.scoring.embedding import directory_digest
from tests.engines.processes import h2h_command, run

pytestmark = pytest.mark.timeout(600)


def demo_pairs(path: Path) -> list[dict[str, str]]:
    from pipeline.dataset import load_scenarios
    from pipeline.paths import demo_dir

    scenarios = load_scenarios(demo_dir() / "scenarios.jsonl")
    rows = [{"id": s.id, "hypothesis": s.user_input, "reference": s.reference} for s in scenarios]
    rows.append({"id": "identical", "hypothesis": "晚安，做个好梦。", "reference": "晚安，做个好梦。"})
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return rows


def cls_similarities(directory: Path, pairs: list[dict[str, str]]) -> list[float]:
    """SS by hand with transformers: CLS vector of the last hidden state, L2-normalised, cosine clipped at 0."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModel.from_pretrained(directory).eval()

    def embed(text: str) -> np.ndarray:
        encoded = tokenizer([text], truncation=True, max_length=512, return_tensors="pt")
        with torch.no_grad():
            vector = model(**encoded).last_hidden_state[0, 0].double().numpy()
        return vector / np.linalg.norm(vector)

    return [max(0.0, float(embed(p["hypothesis"]) @ embed(p["reference"]))) for p in pairs]


def test_score_pairs_with_a_local_bge_m3_equals_a_transformers_computation(tiny: Any, tmp_path: Path) -> None:
    pairs = demo_pairs(tmp_path / "pairs.jsonl")
    command = h2h_command("score-pairs", str(tmp_path / "pairs.jsonl"), "-o", str(tmp_path / "out.jsonl"))
    code, output = run([*command, "--embedder-model", str(tiny.embedder)], log=tmp_path / "log", timeout=400)
    assert code == 0, output[-3000:]
    assert "BGE-M3 unavailable" not in output  # no fallback
    ours = [json.loads(line)["ss"] for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    expected = cls_similarities(tiny.embedder, pairs)
    assert np.max(np.abs(np.array(ours) - np.array(expected))) < 1e-5  # measured 6.7e-7 (float32, padded batches)
    assert ours[-1] == pytest.approx(1.0, abs=1e-6)  # identical texts
    assert np.std(expected[:-1]) > 0.02  # the tiny encoder tells texts apart (a swapped pair would show)


def test_score_names_the_loaded_model_from_the_environment(tiny: Any, tmp_path: Path) -> None:
    from tests.pipeline.scoring.test_run import make_run

    run_dir = make_run(tmp_path / "run").root
    os.environ["H2H_BGE_M3_MODEL"] = str(tiny.embedder)
    try:
        code, output = run(h2h_command("score", "--run", str(run_dir)), log=tmp_path / "log", timeout=400)
    finally:
        del os.environ["H2H_BGE_M3_MODEL"]
    assert code == 0, output[-3000:]
    files = RunDir(run_dir)
    scores = files.load(files.scores, Score)
    expected = f"bge-m3:{Path(tiny.embedder).resolve()}#sha256:{directory_digest(Path(tiny.embedder))[:16]}"
    assert {score.signature.embedder for score in scores.values()} == {expected}
    assert all(score.ss is not None and 0.0 <= score.ss <= 1.0 for score in scores.values())


def test_a_named_model_that_cannot_load_is_an_error_not_a_fallback(tmp_path: Path, engines: None) -> None:
    (tmp_path / "in.jsonl").write_text('{"id": "a", "hypothesis": "好", "reference": "好的"}\n', encoding="utf-8")
    command = h2h_command("score-pairs", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"))
    code, output = run([*command, "--embedder-model", str(tmp_path / "nothing")], log=tmp_path / "log", timeout=300)
    assert code == 1
    assert f"Error: cannot load the BGE-M3 model '{tmp_path / 'nothing'}'" in output
    assert not (tmp_path / "out.jsonl").exists()
