"""``--rouge-measure f|recall``: ROUGE-1/L as rouge-score's F-measure or recall, named in the score signature."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from rouge_score.rouge_scorer import RougeScorer
from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

from pipeline.commands.score import score_command
from pipeline.records import Score, ScoreSignature
from pipeline.scoring.lexical import FastScorer, LibraryScorer, score_pairs
from tests.pipeline.scoring.cases import NAMED_PAIRS, random_pairs
from tests.pipeline.scoring.test_run import make_run

TOLERANCE = 1e-9


class _ZhTokens:
    def tokenize(self, text: str) -> list[str]:
        return TokenizerZh()(text).split()


def _library_recalls(hypothesis: str, reference: str) -> tuple[float, float]:
    """rouge-score's own recalls, nothing of ours."""
    rouge = RougeScorer(["rouge1", "rougeL"], tokenizer=_ZhTokens()).score(reference, hypothesis)
    return rouge["rouge1"].recall, rouge["rougeL"].recall


@pytest.mark.parametrize(("name", "hypothesis", "reference"), NAMED_PAIRS, ids=[case[0] for case in NAMED_PAIRS])
def test_recall_is_rouge_scores_recall_on_both_paths(name: str, hypothesis: str, reference: str) -> None:
    expected = _library_recalls(hypothesis, reference)
    for scorer in (LibraryScorer("zh", rouge_measure="recall"), FastScorer("zh", rouge_measure="recall")):
        scores = scorer.score(hypothesis, reference)
        assert scores.rouge1 == pytest.approx(expected[0], abs=TOLERANCE), name
        assert scores.rougeL == pytest.approx(expected[1], abs=TOLERANCE), name


def test_recall_differs_from_f_where_the_response_is_longer_and_bleu_does_not_move() -> None:
    # the response holds every reference character and more: recall 1, F-measure below 1
    f_scores = FastScorer("zh").score("我想去公园散步，然后回家", "我想去公园")
    recall_scores = FastScorer("zh", rouge_measure="recall").score("我想去公园散步，然后回家", "我想去公园")
    assert recall_scores.rouge1 == 1.0 and recall_scores.rougeL == 1.0
    assert f_scores.rouge1 < 1.0 and f_scores.rougeL < 1.0
    assert recall_scores[:4] == f_scores[:4]  # BLEU is the same either way


@pytest.mark.parametrize("workers", [1, 2])
def test_grouped_and_pooled_recall_equal_the_library(workers: int) -> None:
    pairs = random_pairs(seed=17, count=120)
    library = LibraryScorer("zh", rouge_measure="recall")
    for (hypothesis, reference), scores in zip(
        pairs, score_pairs(pairs, tokenizer="zh", workers=workers, rouge_measure="recall"), strict=True
    ):
        want = library.score(hypothesis, reference)
        assert scores.rouge1 == pytest.approx(want.rouge1, abs=TOLERANCE)
        assert scores.rougeL == pytest.approx(want.rougeL, abs=TOLERANCE)


def test_the_measure_is_in_the_signature_and_a_run_refuses_to_mix_the_two(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    runner = CliRunner()
    recall = runner.invoke(score_command, ["--run", str(run.root), "--embedder", "none", "--rouge-measure", "recall"])
    assert recall.exit_code == 0, recall.output
    scores = list(run.load(run.scores, Score).values())
    assert {score.signature.rouge_measure for score in scores} == {"recall"}
    assert "|rouge=recall|" in scores[0].signature.label()
    before = run.scores.read_bytes()
    mixed = runner.invoke(score_command, ["--run", str(run.root), "--embedder", "none"])
    assert mixed.exit_code == 1 and "--rescore" in mixed.stderr and "rouge=recall" in mixed.stderr
    assert run.scores.read_bytes() == before
    assert '"rouge_measure": "recall"' in run.manifest.read_text(encoding="utf-8")


def test_a_signature_written_before_the_choice_reads_as_f() -> None:
    old = ScoreSignature.model_validate(
        {"sacrebleu": "2.4", "rouge_score": "0.1.2", "tokenizer": "zh", "embedder": "x"}
    )
    assert old.rouge_measure == "f" and "|rouge=f|" in old.label()
    assert old.label() != old.model_copy(update={"rouge_measure": "recall"}).label()
