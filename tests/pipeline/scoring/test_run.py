"""The score stage on a real run directory: complete, library-equal, resumable, never mixing signatures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline.jsonl import read_records, write_records
from pipeline.paths import demo_dir
from pipeline.records import Response, Scenario, Score
from pipeline.rundir import RunDir
from pipeline.scoring.combine import combine_s
from pipeline.scoring.embedding import Embedder
from pipeline.scoring.lexical import LibraryScorer
from pipeline.scoring.run import ScoringError, score_run

DEMO = demo_dir()
BLOCK = 12  # the demo has 6 responses per scenario: blocks of two scenarios, 12 responses


def make_run(root: Path) -> RunDir:
    """A run directory holding every 12th demo scenario (several subtasks, both languages) and its responses.

    A slice of the demo keeps the embedding work small on a 2-core machine.
    """
    scenarios = read_records(DEMO / "scenarios.jsonl", Scenario)[::12]
    wanted = {scenario.id for scenario in scenarios}
    responses = [r for r in read_records(DEMO / "responses.jsonl", Response) if r.scenario_id in wanted]
    run = RunDir(root).ensure()
    write_records(run.scenarios, scenarios)
    write_records(run.responses, responses)
    return run


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> RunDir:
    """A run scored in one go with MiniLM: the result every resumed run must reproduce byte for byte."""
    run = make_run(tmp_path_factory.mktemp("clean"))
    scored = score_run(run, embedder="minilm", tokenizer="zh", workers=1, block_size=BLOCK, progress=False)
    assert scored == len(run.load(run.responses, Response)) > 2 * BLOCK
    assert {scenario.tags.language for scenario in run.load_scenarios().values()} >= {"en", "zh"}
    return run


def test_every_response_is_scored_as_the_libraries_define(clean_run: RunDir, minilm: Embedder) -> None:
    scenarios = clean_run.load_scenarios()
    responses = clean_run.load(clean_run.responses, Response)
    scores = clean_run.load(clean_run.scores, Score)
    assert scores.keys() == responses.keys()
    library = LibraryScorer("zh")
    for key, score in scores.items():
        expected = library.score(responses[key].text, scenarios[key[0]].reference)
        actual = [score.bleu1, score.bleu2, score.bleu3, score.bleu4, score.rouge1, score.rougeL]
        assert actual == pytest.approx(list(expected), abs=1e-9)
        assert score.ss is not None and 0.0 <= score.ss <= 1.0
        assert combine_s(actual[:4], score.rouge1, score.rougeL, score.ss) == score.S
        assert score.subtask == scenarios[key[0]].subtask
        assert score.signature.embedder == minilm.name and score.signature.tokenizer == "zh"
    stage = clean_run.read_manifest()["stages"][-1]
    assert stage["stage"] == "score" and stage["scored"] == len(scores) and stage["embedder"] == minilm.name


@pytest.mark.parametrize("kept_lines", [5, 12, 27], ids=["mid-block", "block-boundary", "late"])
def test_resumed_run_equals_clean_run(clean_run: RunDir, tmp_path: Path, kept_lines: int) -> None:
    clean_lines = clean_run.scores.read_bytes().splitlines(keepends=True)
    run = RunDir(tmp_path / "run").ensure()
    for name in ("scenarios.jsonl", "responses.jsonl"):
        shutil.copy(clean_run.root / name, run.root / name)
    # what a kill leaves: the lines written so far and half of the next one
    run.scores.write_bytes(b"".join(clean_lines[:kept_lines]) + clean_lines[kept_lines][:25])
    scored = score_run(run, embedder="minilm", tokenizer="zh", workers=1, block_size=BLOCK, progress=False)
    assert scored == len(clean_lines) - kept_lines
    assert run.scores.read_bytes() == clean_run.scores.read_bytes()


def test_scoring_a_finished_run_again_does_nothing_and_loads_no_model(
    clean_run: RunDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pipeline.scoring.run as scoring

    def no_model(name: str, **_options: object) -> Embedder:
        raise AssertionError(f"loaded {name} with nothing to score")

    monkeypatch.setattr(scoring, "load_embedder", no_model)
    before = clean_run.scores.read_bytes()
    assert score_run(clean_run, embedder="minilm", tokenizer="zh", workers=1, block_size=BLOCK, progress=False) == 0
    assert clean_run.scores.read_bytes() == before
    clean_run.scores.write_bytes(b"".join(before.splitlines(keepends=True)[:-1]))  # one response left to score
    try:
        with pytest.raises(AssertionError, match="loaded minilm"):
            score_run(clean_run, embedder="minilm", tokenizer="zh", workers=1, block_size=BLOCK, progress=False)
    finally:
        clean_run.scores.write_bytes(before)


def test_the_name_an_embedder_will_carry_is_known_without_loading_where_it_can_be(minilm: Embedder) -> None:
    from pipeline.scoring.embedding import embedder_name_without_loading

    assert embedder_name_without_loading("minilm") == minilm.name
    assert embedder_name_without_loading("none") == "none"
    assert embedder_name_without_loading("bge-m3") is None  # BGE-M3, or MiniLM when it cannot load
    with pytest.raises(ValueError, match="unknown embedder"):
        embedder_name_without_loading("word2vec")


def test_two_worker_processes_write_the_same_file(tmp_path: Path) -> None:
    one, two = make_run(tmp_path / "one"), make_run(tmp_path / "two")
    score_run(one, embedder="none", tokenizer="zh", workers=1, block_size=BLOCK, progress=False)
    score_run(two, embedder="none", tokenizer="zh", workers=2, block_size=BLOCK, progress=False)
    assert two.scores.read_bytes() == one.scores.read_bytes()
    assert all(score.ss is None and score.S is None for score in one.load(one.scores, Score).values())


def test_another_signature_is_refused_unless_rescoring(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    count = score_run(run, embedder="none", tokenizer="zh", workers=1, progress=False)
    before = run.scores.read_bytes()
    with pytest.raises(ScoringError, match=r"never mix.*--rescore"):
        score_run(run, embedder="none", tokenizer="jieba", workers=1, progress=False)
    assert run.scores.read_bytes() == before
    assert score_run(run, embedder="none", tokenizer="jieba", workers=1, rescore=True, progress=False) == count
    archived = list(run.root.glob("scores.replaced-*.jsonl"))
    assert len(archived) == 1 and archived[0].read_bytes() == before
    assert {score.signature.tokenizer for score in run.load(run.scores, Score).values()} == {"jieba:0.42.1"}


def test_response_to_an_unknown_scenario_is_an_error(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    with open(run.responses, "a", encoding="utf-8") as handle:
        stray = {"scenario_id": "nowhere", "model": "m", "variant": "with_sap", "text": "hi", "backend": "x"}
        handle.write(json.dumps({**stray, "prompt_version": "v"}) + "\n")
    with pytest.raises(ScoringError, match="nowhere"):
        score_run(run, embedder="none", tokenizer="zh", workers=1, progress=False)
    assert not run.scores.exists() or run.scores.read_text() == ""
