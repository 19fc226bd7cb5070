"""``h2h score-pairs`` and ``h2h score`` end to end: files in, files out, clear errors."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.commands.score import OUTPUT_FIELDS, score_command, score_pairs_command
from pipeline.records import Response, Score
from pipeline.rundir import RunDir
from pipeline.scoring.combine import combine_s
from pipeline.scoring.embedding import Embedder
from pipeline.scoring.lexical import LibraryScorer
from tests.pipeline.scoring.cases import NAMED_PAIRS
from tests.pipeline.scoring.test_run import make_run
from tests.repo import REPO_ROOT


def write_pairs(path: Path, rows: list[dict | str]) -> Path:
    lines = [row if isinstance(row, str) else json.dumps(row, ensure_ascii=False) for row in rows]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def named_rows() -> list[dict]:
    # ids may be strings or integers; both come back as given
    return [
        {"id": index if index % 2 else name, "hypothesis": hypothesis, "reference": reference}
        for index, (name, hypothesis, reference) in enumerate(NAMED_PAIRS)
    ]


def read_out(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_score_pairs_writes_every_metric_in_input_order(tmp_path: Path, minilm: Embedder) -> None:
    rows = [row for row in named_rows() if len(row["hypothesis"]) < 200]  # long texts make MiniLM slow on a CPU
    source, target = write_pairs(tmp_path / "in.jsonl", rows), tmp_path / "out.jsonl"
    result = CliRunner().invoke(score_pairs_command, [str(source), "-o", str(target), "--embedder", "minilm"])
    assert result.exit_code == 0, result.output
    out = read_out(target)
    assert [row["id"] for row in out] == [row["id"] for row in rows]
    library = LibraryScorer("zh")
    for row, line in zip(rows, out, strict=True):
        assert tuple(line) == OUTPUT_FIELDS
        expected = library.score(row["hypothesis"], row["reference"])
        assert [line[field] for field in OUTPUT_FIELDS[1:7]] == pytest.approx(list(expected), abs=1e-9)
        assert 0.0 <= line["ss"] <= 1.0
        bleu = [line[f"bleu{n}"] for n in range(1, 5)]
        assert line["S"] == pytest.approx(combine_s(bleu, line["rouge1"], line["rougeL"], line["ss"]))
    identical = [line for row, line in zip(rows, out, strict=True) if row["hypothesis"] == row["reference"]]
    assert len(identical) == 3  # "identical", "identical english", "one word each"
    for line in identical:
        assert line["ss"] == pytest.approx(1.0, abs=1e-6) and line["S"] == pytest.approx(1.0, abs=1e-6)


def test_score_pairs_through_the_h2h_entry_point_without_similarity(tmp_path: Path) -> None:
    source = write_pairs(tmp_path / "in.jsonl", named_rows())
    target = tmp_path / "out.jsonl"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "studio.cli", "score-pairs", str(source), "-o", str(target)]
    completed = subprocess.run(
        [*command, "--embedder", "none", "--tokenizer", "jieba", "--workers", "2"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    out = read_out(target)
    assert len(out) == len(NAMED_PAIRS)
    assert all(line["ss"] is None and line["S"] is None for line in out)
    library = LibraryScorer("jieba")
    for (_, hypothesis, reference), line in zip(NAMED_PAIRS, out, strict=True):
        expected = list(library.score(hypothesis, reference))
        assert [line[field] for field in OUTPUT_FIELDS[1:7]] == pytest.approx(expected, abs=1e-9)


@pytest.mark.skipif(importlib.util.find_spec("FlagEmbedding") is not None, reason="FlagEmbedding is installed here")
def test_default_embedder_falls_back_with_a_line_on_stderr(tmp_path: Path) -> None:
    source = write_pairs(tmp_path / "in.jsonl", named_rows()[:2])
    result = CliRunner().invoke(score_pairs_command, [str(source), "-o", str(tmp_path / "out.jsonl")])
    assert result.exit_code == 0, result.output
    assert "warning: BGE-M3 unavailable" in result.stderr and "minilm:all-MiniLM-L6-v2" in result.stderr
    assert all(line["ss"] is not None for line in read_out(tmp_path / "out.jsonl"))


def test_bad_lines_are_all_reported_and_nothing_is_written(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("earlier output\n")
    source = write_pairs(
        tmp_path / "in.jsonl",
        [
            {"id": "a", "hypothesis": "好", "reference": "好的"},
            "{not json",
            {"id": "b", "reference": "好的"},
            {"id": "c", "hypothesis": 5, "reference": "好的"},
            {"id": "a", "hypothesis": "好", "reference": "好的"},
            {"id": "d", "hypothesis": "好", "reference": "好的", "extra": 1},
        ],
    )
    result = CliRunner().invoke(score_pairs_command, [str(source), "-o", str(target), "--embedder", "none"])
    assert result.exit_code == 1
    for expected in (
        f"{source}:2: (line): invalid JSON",
        f"{source}:3: hypothesis: Field required",
        f"{source}:4: hypothesis: Input should be a valid string",
        f"{source}:5: id: duplicate id (first on line 1)",
        f"{source}:6: extra: Extra inputs are not permitted",
        "5 problem(s)",
    ):
        assert expected in result.stderr
    assert target.read_text() == "earlier output\n"


def test_score_command_scores_a_run_and_refuses_to_mix_signatures(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    runner = CliRunner()
    result = runner.invoke(score_command, ["--run", str(run.root), "--embedder", "none", "--workers", "2"])
    assert result.exit_code == 0, result.output
    scores = run.load(run.scores, Score)
    assert scores.keys() == run.load(run.responses, Response).keys()
    assert f"scored {len(scores)} responses" in result.output
    before = run.scores.read_bytes()
    mixed = runner.invoke(score_command, ["--run", str(run.root), "--embedder", "none", "--tokenizer", "jieba"])
    assert mixed.exit_code == 1 and "--rescore" in mixed.stderr
    assert run.scores.read_bytes() == before


def test_score_command_on_a_scored_run_loads_no_model(
    tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pipeline.scoring.embedding as embedding
    import pipeline.scoring.run as scoring

    run = make_run(tmp_path / "run")
    runner = CliRunner()
    assert runner.invoke(score_command, ["--run", str(run.root), "--embedder", "minilm"]).exit_code == 0
    before = run.scores.read_bytes()

    def no_model(name: str, **_options: object) -> Embedder:
        raise AssertionError(f"loaded {name} with nothing to score")

    monkeypatch.setattr(embedding, "load_embedder", no_model)
    monkeypatch.setattr(scoring, "load_embedder", no_model)
    again = runner.invoke(score_command, ["--run", str(run.root), "--embedder", "minilm"])
    assert again.exit_code == 0, again.output
    assert "scored 0 responses" in again.output and run.scores.read_bytes() == before


def test_score_command_without_responses_says_so(tmp_path: Path) -> None:
    result = CliRunner().invoke(score_command, ["--run", str(RunDir(tmp_path / "empty").ensure().root)])
    assert result.exit_code == 1 and "no responses to score" in result.stderr


def test_score_command_names_a_bad_run_line_and_keeps_the_scores(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    runner = CliRunner()
    assert runner.invoke(score_command, ["--run", str(run.root), "--embedder", "none"]).exit_code == 0
    before = run.scores.read_bytes()
    lines = run.responses.read_text(encoding="utf-8").splitlines(keepends=True)
    broken = json.loads(lines[1])
    broken["variant"] = "with_sapp"
    run.responses.write_text(lines[0] + json.dumps(broken) + "\n" + "".join(lines[2:]), encoding="utf-8")
    result = runner.invoke(score_command, ["--run", str(run.root), "--embedder", "none"])
    assert result.exit_code == 1
    assert f"{run.responses}:2: variant: Input should be 'with_sap' or 'without_sap'" in result.stderr
    assert run.scores.read_bytes() == before


@pytest.mark.skipif(importlib.util.find_spec("FlagEmbedding") is not None, reason="FlagEmbedding is installed here")
def test_embedder_model_that_cannot_load_stops_score_pairs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = write_pairs(tmp_path / "in.jsonl", named_rows()[:2])
    monkeypatch.setenv("H2H_BGE_M3_MODEL", str(tmp_path / "my-bge-m3"))
    result = CliRunner().invoke(score_pairs_command, [str(source), "-o", str(tmp_path / "out.jsonl")])
    assert result.exit_code == 1
    assert f"cannot load the BGE-M3 model '{tmp_path / 'my-bge-m3'}'" in result.stderr
    assert "minilm" not in result.stderr and not (tmp_path / "out.jsonl").exists()


def test_the_embedder_batch_size_reaches_the_embedder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pipeline.scoring.embedding as embedding
    import pipeline.scoring.run as scoring

    asked: list[object] = []

    def recorded(name: str, **options: object) -> None:
        asked.append(options.get("batch_size"))
        return None  # no similarity: the lexical scores still come out

    monkeypatch.setattr(embedding, "load_embedder", recorded)
    monkeypatch.setattr(scoring, "load_embedder", recorded)
    source = write_pairs(tmp_path / "pairs.jsonl", named_rows())
    runner = CliRunner()
    result = runner.invoke(
        score_pairs_command, [str(source), "-o", str(tmp_path / "out.jsonl"), "--embedder-batch-size", "7"]
    )
    assert result.exit_code == 0, result.output
    run = make_run(tmp_path / "run")
    result = runner.invoke(score_command, ["--run", str(run.root), "--embedder-batch-size", "9"])
    assert result.exit_code == 0, result.output
    assert asked and set(asked) == {7, 9} and asked[0] == 7
    refused = runner.invoke(
        score_pairs_command, [str(source), "-o", str(tmp_path / "x.jsonl"), "--embedder-batch-size", "0"]
    )
    assert refused.exit_code == 2 and "--embedder-batch-size" in refused.output
