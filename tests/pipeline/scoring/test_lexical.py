"""The lexical metrics: the library definition, and the fast path proven equal to it."""

from __future__ import annotations

import random

import pytest
from rouge_score.rouge_scorer import RougeScorer
from sacrebleu.metrics import BLEU
from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

from pipeline.scoring.lexical import FastScorer, LexicalScores, LibraryScorer, cumulative_bleu, score_pairs
from pipeline.scoring.tokenize import get_tokenizer
from tests.pipeline.scoring.cases import NAMED_PAIRS, random_pairs

TOLERANCE = 1e-9
IDS = [case[0] for case in NAMED_PAIRS]


class _ZhTokens:
    def tokenize(self, text: str) -> list[str]:
        return TokenizerZh()(text).split()


def _definition(hypothesis: str, reference: str) -> list[float]:
    """The definition of ARCHITECTURE.md "Scores", written out with the libraries and nothing of ours."""
    bleu = [
        BLEU(max_ngram_order=n, effective_order=True, tokenize="zh").sentence_score(hypothesis, [reference]).score / 100
        for n in range(1, 5)
    ]
    rouge = RougeScorer(["rouge1", "rougeL"], tokenizer=_ZhTokens()).score(reference, hypothesis)
    return [*bleu, rouge["rouge1"].fmeasure, rouge["rougeL"].fmeasure]


def _assert_close(actual: LexicalScores, expected: LexicalScores | list[float], context: object) -> None:
    assert len(actual) == len(expected) == 6
    for got, want in zip(actual, expected, strict=True):
        assert abs(got - want) <= TOLERANCE, (context, actual, expected)


@pytest.mark.parametrize(("name", "hypothesis", "reference"), NAMED_PAIRS, ids=IDS)
def test_library_scorer_is_the_definition(name: str, hypothesis: str, reference: str) -> None:
    _assert_close(LibraryScorer("zh").score(hypothesis, reference), _definition(hypothesis, reference), name)


@pytest.mark.parametrize("tokenizer", ["zh", "jieba"])
@pytest.mark.parametrize(("name", "hypothesis", "reference"), NAMED_PAIRS, ids=IDS)
def test_fast_scorer_equals_library(tokenizer: str, name: str, hypothesis: str, reference: str) -> None:
    expected = LibraryScorer(tokenizer).score(hypothesis, reference)
    _assert_close(FastScorer(tokenizer).score(hypothesis, reference), expected, name)


@pytest.mark.parametrize("tokenizer", ["zh", "jieba"])
def test_fast_scorer_equals_library_on_many_random_pairs(tokenizer: str) -> None:
    library, fast = LibraryScorer(tokenizer), FastScorer(tokenizer)
    for hypothesis, reference in random_pairs(seed=20251122, count=600):
        _assert_close(fast.score(hypothesis, reference), library.score(hypothesis, reference), (hypothesis, reference))


@pytest.mark.parametrize("tokenizer", ["zh", "jieba"])
@pytest.mark.parametrize("max_cells", [1 << 22, 50], ids=["one-step", "many-steps"])
def test_group_scoring_equals_library_for_every_named_reference(tokenizer: str, max_cells: int) -> None:
    library, fast = LibraryScorer(tokenizer), FastScorer(tokenizer)
    hypotheses = [hypothesis for _, hypothesis, _ in NAMED_PAIRS] + [reference for _, _, reference in NAMED_PAIRS]
    for name, _, reference in [*NAMED_PAIRS, ("empty reference", "", "")]:
        scored = fast.score_group(reference, hypotheses, max_cells=max_cells)
        assert len(scored) == len(hypotheses)
        for hypothesis, scores in zip(hypotheses, scored, strict=True):
            _assert_close(scores, library.score(hypothesis, reference), (name, hypothesis))


def test_metric_values_on_known_cases() -> None:
    scorer = FastScorer("zh")
    assert list(scorer.score("别担心，我一直都在。", "别担心，我一直都在。")) == [1.0] * 6
    assert list(scorer.score("", "你好")) == [0.0] * 6
    assert list(scorer.score("abc def", "完全不同的句子")) == [0.0] * 6
    # Chinese characters count: the default rouge-score tokenizer would see no tokens here at all
    assert scorer.score("我想去公园", "我想去公园散步").rouge1 == pytest.approx(2 * 1.0 * (5 / 7) / (1.0 + 5 / 7))


def test_jieba_and_zh_tokenisations_give_different_numbers() -> None:
    hypothesis, reference = "今天天气很好，我们去公园散步吧。", "今天的天气真不错，一起去公园走走吧。"
    zh, jieba = FastScorer("zh").score(hypothesis, reference), FastScorer("jieba").score(hypothesis, reference)
    assert zh != jieba
    assert all(0.0 <= value <= 1.0 for value in (*zh, *jieba))


def test_cumulative_bleu_is_bit_identical_to_sacrebleu_compute_bleu() -> None:
    rng = random.Random(5)
    for _ in range(5000):
        sys_len, ref_len = rng.randint(0, 12), rng.randint(0, 12)
        total = [max(sys_len - order, 0) for order in range(4)]
        correct = [rng.randint(0, count) if rng.random() < 0.7 else 0 for count in total]
        ours = cumulative_bleu(correct, total, sys_len, ref_len)
        for n in range(1, 5):
            library = BLEU.compute_bleu(
                correct[:n], total[:n], sys_len, ref_len, smooth_method="exp", effective_order=True, max_ngram_order=n
            )
            assert ours[n - 1] == library.score / 100, (correct, total, sys_len, ref_len, n)


def test_score_pairs_keeps_input_order_and_matches_per_pair_scores() -> None:
    pairs = random_pairs(seed=99, count=200)
    shared = [(hypothesis, pairs[index % 7][1]) for index, (hypothesis, _) in enumerate(pairs)]
    library = LibraryScorer("zh")
    for batch in (pairs, shared):
        scored = score_pairs(batch, tokenizer="zh", workers=1)
        assert len(scored) == len(batch)
        for (hypothesis, reference), scores in zip(batch, scored, strict=True):
            _assert_close(scores, library.score(hypothesis, reference), (hypothesis, reference))


def test_score_pairs_in_two_processes_gives_the_same_numbers() -> None:
    pairs = [(hypothesis, reference) for hypothesis, reference in random_pairs(seed=1, count=300)]
    pairs += [(hypothesis, pairs[0][1]) for hypothesis, _ in pairs[:50]]
    assert score_pairs(pairs, tokenizer="jieba", workers=2) == score_pairs(pairs, tokenizer="jieba", workers=1)


def test_reference_statistics_are_computed_once_per_reference() -> None:
    scorer = FastScorer("zh")
    first = scorer.reference("我们一起去看海吧。")
    scorer.score("看海", "我们一起去看海吧。")
    assert scorer.reference("我们一起去看海吧。") is first
    assert first.length == len(get_tokenizer("zh").tokenize("我们一起去看海吧。"))
