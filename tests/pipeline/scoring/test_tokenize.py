"""Our tokenizers against sacrebleu's: the same tokens, always."""

from __future__ import annotations

import random

import pytest
from sacrebleu.tokenizers.tokenizer_re import TokenizerRegexp
from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

from pipeline.scoring.tokenize import (
    CJK_RANGES,
    PostTokenizer,
    ZhTokenizer,
    cjk_pattern,
    cjk_spacing_table,
    get_tokenizer,
    library_cjk_ranges,
)
from tests.pipeline.scoring.cases import NAMED_PAIRS, random_text


def test_cjk_class_equals_sacrebleu_on_the_whole_bmp_and_sampled_astral_planes() -> None:
    is_chinese = TokenizerZh._is_chinese_char.__wrapped__  # the library's test, without its cache
    pattern = cjk_pattern()
    # every code point of the BMP, and every 7th beyond it (where the library's string comparisons
    # put nothing, whatever its range comments say)
    codes = [*range(0x10000), *range(0x10000, 0x110000, 7)]
    differing = [code for code in codes if bool(pattern.fullmatch(chr(code))) != is_chinese(chr(code))]
    assert differing == []
    assert set(cjk_spacing_table()) == {code for code in codes if is_chinese(chr(code))}
    assert len(cjk_spacing_table()) > 20000


def test_written_out_cjk_ranges_are_sacrebleus() -> None:
    assert library_cjk_ranges() == CJK_RANGES
    assert (0x4E00, 0x9FA5) in CJK_RANGES


class _Untouchable:
    """A rule pattern that fails the test when a rule runs at all."""

    def sub(self, replacement: str, line: str) -> str:
        raise AssertionError(f"a 13a rule ran on {line!r}")


#: CJK, English, digits, whitespace, emoji and full-width punctuation: no ASCII punctuation mark.
_NO_ASCII_PUNCTUATION = "我很开心今天公里ab XYZ09 \t\n😊🎉，。！？「」、—…ｗ１"


def test_post_tokenizer_skips_its_rules_on_text_without_ascii_punctuation_with_the_same_output() -> None:
    rng = random.Random(5)
    library, ours, skipping = TokenizerRegexp(), PostTokenizer(), PostTokenizer()
    skipping._rules = [(_Untouchable(), "") for _ in range(4)]  # type: ignore[misc]
    for _ in range(2000):
        line = "".join(rng.choice(_NO_ASCII_PUNCTUATION) for _ in range(rng.randint(0, 40)))
        assert skipping(line) == ours(line) == library(line), repr(line)
    assert ours("3.5 km, 好") == library("3.5 km, 好") == "3.5 km , 好"  # one mark: the rules run
    with pytest.raises(AssertionError, match="a 13a rule ran"):
        skipping("a-b")


def test_zh_tokenizer_equals_sacrebleu_on_random_mixed_texts_with_and_without_punctuation() -> None:
    rng = random.Random(13)
    library, ours = TokenizerZh(), ZhTokenizer()
    for _ in range(3000):
        alphabet = _NO_ASCII_PUNCTUATION + ("" if rng.random() < 0.5 else ".,-'!()/:@[`{~")
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 50)))
        assert ours.segment(text) == library(text), repr(text)
        assert ours.tokenize(text) == library(text).split(), repr(text)


def test_post_tokenizer_equals_sacrebleu_on_random_ascii_heavy_lines() -> None:
    rng = random.Random(7)
    alphabet = "ab9 0.,-:;'\"()[]{}<>@&/\\~`|!?$%#^*+=_\t好"
    library, ours = TokenizerRegexp(), PostTokenizer()
    for _ in range(3000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert ours(line) == library(line), repr(line)


@pytest.mark.parametrize(("name", "hypothesis", "reference"), NAMED_PAIRS, ids=[case[0] for case in NAMED_PAIRS])
def test_zh_tokenizer_equals_sacrebleu_on_named_texts(name: str, hypothesis: str, reference: str) -> None:
    library, ours = TokenizerZh(), ZhTokenizer()
    for text in (hypothesis, reference):
        assert ours.segment(text) == library(text)
        assert ours.tokenize(text) == library(text).split()


def test_zh_tokenizer_equals_sacrebleu_on_random_texts() -> None:
    rng = random.Random(11)
    library, ours = TokenizerZh(), ZhTokenizer()
    for _ in range(2000):
        text = random_text(rng, rng.randint(0, 60))
        assert ours.segment(text) == library(text), repr(text)
        assert ours.tokenize(text) == library(text).split(), repr(text)


def test_zh_splits_every_cjk_character_and_keeps_english_words() -> None:
    tokens = get_tokenizer("zh").tokenize("我很开心, don't worry!")
    assert tokens == ["我", "很", "开", "心", ",", "don't", "worry", "!"]


def test_jieba_segments_cjk_words_and_treats_other_text_like_13a() -> None:
    tokens = get_tokenizer("jieba").tokenize("我今天很开心，don't worry! 3.5公里（约1,000步）😊")
    assert tokens[:5] == ["我", "今天", "很", "开心", "，"]
    # the non-CJK run goes through the same rules as sacrebleu's zh tokenizer
    assert tokens[5:9] == ["don't", "worry", "!", "3.5"]
    assert "公里" in tokens and "1,000" in tokens and tokens[-1] == "😊"
    assert get_tokenizer("jieba").name.startswith("jieba:")


def test_jieba_tokens_never_hold_whitespace() -> None:
    rng = random.Random(3)
    tokenizer = get_tokenizer("jieba")
    for _ in range(300):
        for token in tokenizer.tokenize(random_text(rng, rng.randint(0, 50))):
            assert token and token == token.strip() and " " not in token


def test_unknown_tokenizer_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown tokenizer 'spm'"):
        get_tokenizer("spm")
