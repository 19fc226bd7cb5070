"""BLEU-1..4, ROUGE-1 and ROUGE-L of a response against its reference (ARCHITECTURE.md "Scores").

Two implementations give the same numbers:

* :class:`LibraryScorer` is the definition: ``sacrebleu.metrics.BLEU(max_ngram_order=n,
  effective_order=True, tokenize=...).sentence_score(hyp, [ref]).score / 100`` for n = 1..4 and
  rouge-score's ``RougeScorer(["rouge1", "rougeL"], tokenizer=...)`` F-measures (or recalls: ``rouge_measure``,
  README "Where this project departs from the paper"). It is slow
  (rouge-score's LCS is a pure-Python table) and serves as the reference in tests and benchmarks.
* :class:`FastScorer` tokenises and counts each reference's n-grams once (every model answers the
  same references). For the many hypotheses of one reference it counts clipped n-gram matches of all
  four orders with a few vectorised numpy calls (n-grams packed into integers, one ``bincount``);
  for a lone pair it uses Counters. It applies sacrebleu's ``compute_bleu`` arithmetic once for all
  four orders (:func:`cumulative_bleu`, proven bit-identical in the tests), takes ROUGE-1 from the
  unigram counts, and computes the LCS with rapidfuzz's bit-parallel C implementation.

:func:`score_pairs` runs the fast path over many pairs, optionally in a process pool.
"""

from __future__ import annotations

import math
import multiprocessing
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, repeat
from typing import NamedTuple, cast

import numpy as np

from pipeline.scoring.tokenize import get_tokenizer
from pipeline.taxonomy import RougeMeasure

MAX_ORDER = 4
#: Below this many hypotheses per reference, per-pair counting beats numpy's per-call overhead.
GROUP_MIN = 4
#: Upper bound on the cells of one (hypotheses x reference n-grams) count matrix.
GROUP_CELLS = 1 << 22
#: An n-gram as the Counters key it: a 1-gram by its token, longer ones by their tuple of tokens.
NGram = str | tuple[str, ...]
#: ``min`` of two counts, typed (``map(min, ...)`` runs in C; min's overloads defeat map's type inference).
_smaller: Callable[[int, int], int] = min


class LexicalScores(NamedTuple):
    """The six lexical metrics of one pair, each in [0, 1]."""

    bleu1: float
    bleu2: float
    bleu3: float
    bleu4: float
    rouge1: float
    rougeL: float  # noqa: N815 - rouge-score's name


#: rouge-score's rouge types: our ROUGE fields carry rouge-score's names (ARCHITECTURE.md "Scores").
ROUGE_TYPES: tuple[str, ...] = tuple(name for name in LexicalScores._fields if name.startswith("rouge"))


class _TokenList:
    """rouge-score's tokenizer interface over one of our tokenizers."""

    def __init__(self, tokenizer_name: str) -> None:
        self._tokenizer = get_tokenizer(tokenizer_name)

    def tokenize(self, text: str) -> list[str]:
        return self._tokenizer.tokenize(text)


class LibraryScorer:
    """The metrics exactly as sacrebleu and rouge-score compute them, one pair at a time (slow)."""

    def __init__(self, tokenizer: str = "zh", *, rouge_measure: RougeMeasure = "f") -> None:
        from rouge_score.rouge_scorer import RougeScorer
        from sacrebleu.metrics.bleu import BLEU

        self.tokenizer_name = tokenizer
        self._rouge_field = "fmeasure" if rouge_measure == "f" else "recall"
        # The zh tokenizer is sacrebleu's own; jieba text is pre-tokenised, so BLEU must not re-tokenise it.
        bleu_tokenize = "zh" if tokenizer == "zh" else "none"
        self._bleus = [
            BLEU(max_ngram_order=n, effective_order=True, tokenize=bleu_tokenize) for n in range(1, MAX_ORDER + 1)
        ]
        rouge_tokenizer = _SacrebleuZhTokens() if tokenizer == "zh" else _TokenList(tokenizer)
        self._rouge = RougeScorer(list(ROUGE_TYPES), tokenizer=rouge_tokenizer)

    def _bleu_text(self, text: str) -> str:
        if self.tokenizer_name == "zh":
            return text
        return " ".join(get_tokenizer(self.tokenizer_name).tokenize(text))

    def score(self, hypothesis: str, reference: str) -> LexicalScores:
        """Return the six metrics of ``hypothesis`` against ``reference``."""
        hyp, ref = self._bleu_text(hypothesis), self._bleu_text(reference)
        bleu = [metric.sentence_score(hyp, [ref]).score / 100 for metric in self._bleus]
        rouge = self._rouge.score(reference, hypothesis)  # rouge-score takes (target, prediction)
        rouge1, rouge_l = (getattr(rouge[name], self._rouge_field) for name in ROUGE_TYPES)
        return LexicalScores._make((*bleu, rouge1, rouge_l))


class _SacrebleuZhTokens:
    """rouge-score tokenizer that is literally sacrebleu's ``zh`` tokenizer (for the reference path)."""

    def __init__(self) -> None:
        from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

        self._zh = TokenizerZh()  # type: ignore[no-untyped-call]  # sacrebleu leaves __init__ unannotated

    def tokenize(self, text: str) -> list[str]:
        tokenized: str = self._zh(text.rstrip())
        return tokenized.split()


@dataclass(frozen=True)
class ReferenceStats:
    """What a reference contributes to every pair.

    ``vocabulary`` numbers the reference's distinct tokens from 1 (0 stands for any token the reference
    lacks, which can match nothing); ``ngrams`` holds Counters of the 1- to 4-grams (per-pair path, counted on
    first use: building them took a quarter of a group's time, and the group path never reads them);
    ``packed`` holds, per order, the sorted distinct n-grams packed into integers (each token id a digit
    in base ``base``) and their counts (group path).
    """

    length: int
    vocabulary: dict[str, int]
    token_ids: list[int]
    tokens: list[str]
    base: int
    packed: tuple[tuple[np.ndarray, np.ndarray], ...]

    @cached_property
    def ngrams(self) -> tuple[Counter[NGram], ...]:
        """Counters of the reference's 1- to 4-grams (1-grams keyed by the token itself)."""
        return _ngram_counts(self.tokens)

    @property
    def packable(self) -> bool:
        """Whether 4-grams fit into int64 digits of this base."""
        return bool(self.base**MAX_ORDER < 2**62)


def reference_stats(tokens: list[str]) -> ReferenceStats:
    """Compute the statistics of a reference from its tokens."""
    vocabulary: dict[str, int] = {}
    token_ids = [vocabulary.setdefault(token, len(vocabulary) + 1) for token in tokens]
    base = len(vocabulary) + 1
    packed = []
    if base**MAX_ORDER < 2**62:
        ids = np.asarray(token_ids, dtype=np.int64)
        keys = ids
        for order in range(1, MAX_ORDER + 1):
            if order > 1:
                keys = keys[:-1] * base + ids[order - 1 :]
            packed.append(np.unique(keys, return_counts=True))
    return ReferenceStats(len(tokens), vocabulary, token_ids, tokens, base, tuple(packed))


def _ngram_counts(tokens: list[str]) -> tuple[Counter[NGram], ...]:
    """Counters of the 1- to 4-grams of ``tokens`` (1-grams keyed by the token itself)."""
    counts: list[Counter[NGram]] = [Counter[NGram](tokens)]
    for order in range(2, MAX_ORDER + 1):
        counts.append(Counter[NGram](zip(*(tokens[i:] for i in range(order)), strict=False)))
    return tuple(counts)


def clipped_matches(tokens: list[str], reference_ngrams: Sequence[Counter[NGram]]) -> list[int]:
    """For n = 1..4: the sum over n-grams of min(count in ``tokens``, count in the reference).

    Only n-grams the reference has are counted (C-level ``filter``), and once an order has no match
    no higher order can have one. Equals sacrebleu's per-order clipped counts (tested).
    """
    correct: list[int] = []
    for order, ref_counts in enumerate(reference_ngrams, start=1):
        grams: Iterable[NGram] = tokens if order == 1 else zip(*(tokens[i:] for i in range(order)), strict=False)
        shared = Counter[NGram](filter(ref_counts.__contains__, grams))
        if not shared:
            return correct + [0] * (MAX_ORDER - len(correct))
        correct.append(sum(map(_smaller, shared.values(), map(ref_counts.__getitem__, shared))))
    return correct


def grouped_clipped_matches(id_lists: Sequence[list[int]], ref: ReferenceStats) -> np.ndarray:
    """:func:`clipped_matches` for many hypotheses of one reference at once: an array (hypotheses, orders).

    ``id_lists`` are the hypotheses' tokens as reference ids (0 for tokens the reference lacks). The
    hypotheses are laid end to end with a 0 between them, so no n-gram that spans two of them (or holds
    an unknown token) can match; counts per (hypothesis, reference n-gram) come from one ``bincount``.
    """
    count = len(id_lists)
    lengths = np.fromiter(map(len, id_lists), dtype=np.int64, count=count)
    laid_out = chain.from_iterable(ids + [0] for ids in id_lists)
    flat = np.fromiter(laid_out, dtype=np.int64, count=int(lengths.sum()) + count)
    owner = np.repeat(np.arange(count), lengths + 1)
    known = flat != 0
    keys, valid = flat, known
    correct = np.zeros((count, MAX_ORDER), dtype=np.int64)
    for order, (ref_keys, ref_counts) in enumerate(ref.packed, start=1):
        if order > 1:
            keys = keys[:-1] * ref.base + flat[order - 1 :]
            valid = valid[:-1] & known[order - 1 :]
        size = len(ref_keys)
        if size == 0:
            break
        position = np.minimum(np.searchsorted(ref_keys, keys), size - 1)
        hit = valid & (ref_keys[position] == keys)
        cells = np.bincount(owner[: len(keys)][hit] * size + position[hit], minlength=count * size)
        correct[:, order - 1] = np.minimum(cells.reshape(count, size), ref_counts).sum(axis=1)
    return correct


def _log(value: float) -> float:
    """sacrebleu's ``my_log``: log floored to a very low number at zero."""
    return -9999999999 if value == 0.0 else math.log(value)


def cumulative_bleu(correct: Sequence[int], total: Sequence[int], sys_len: int, ref_len: int) -> list[float]:
    """BLEU-1..4 (as fractions) from the clipped and total n-gram counts of orders 1..4.

    The same arithmetic, in the same order, as sacrebleu's ``BLEU.compute_bleu`` with
    ``smooth_method="exp"`` and ``effective_order=True`` for ``max_ngram_order`` = 1..4, divided by
    100 — so the floats are bit-identical (the tests compare against the library). Computing the
    shared precisions once for all four orders is what makes it worth having.
    """
    brevity = 1.0
    if sys_len < ref_len:
        brevity = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    logs: list[float] = []
    smooth = 1.0
    for n in range(MAX_ORDER):
        if total[n] == 0:
            break
        if correct[n] == 0:
            smooth *= 2
            logs.append(_log(100.0 / (smooth * total[n])))
        else:
            logs.append(_log(100.0 * correct[n] / total[n]))
    scores = []
    for order in range(1, MAX_ORDER + 1):
        if not any(correct[:order]):
            scores.append(0.0)
            continue
        effective = min(order, len(logs))
        scores.append(brevity * math.exp(sum(logs[:effective]) / effective) / 100)
    return scores


class FastScorer:
    """The same numbers as :class:`LibraryScorer`, computed from shared reference statistics."""

    def __init__(self, tokenizer: str = "zh", *, rouge_measure: RougeMeasure = "f") -> None:
        from rapidfuzz.distance import LCSseq
        from rouge_score.scoring import fmeasure

        self._tokenizer = get_tokenizer(tokenizer)
        # rouge-score's own formula for the F-measure; recall is the overlap over the reference's length
        self._measure: Callable[[float, float], float] = fmeasure if rouge_measure == "f" else _recall
        self._lcs = LCSseq.similarity
        self._references: dict[str, ReferenceStats] = {}

    def reference(self, text: str) -> ReferenceStats:
        """Return (and remember) the statistics of reference ``text``."""
        stats = self._references.get(text)
        if stats is None:
            stats = reference_stats(self._tokenizer.tokenize(text))
            self._references[text] = stats
        return stats

    def forget_references(self) -> None:
        """Drop remembered references (bounded memory when references are not seen again)."""
        self._references.clear()

    def score(self, hypothesis: str, reference: str) -> LexicalScores:
        """Return the six metrics of ``hypothesis`` against ``reference``."""
        ref = self.reference(reference)
        tokens = self._tokenizer.tokenize(hypothesis)
        hyp_ids = list(map(ref.vocabulary.get, tokens, repeat(0)))
        return self._metrics(hyp_ids, clipped_matches(tokens, ref.ngrams), ref)

    def score_group(
        self, reference: str, hypotheses: Sequence[str], *, max_cells: int = GROUP_CELLS
    ) -> list[LexicalScores]:
        """Return the metrics of each of ``hypotheses`` against one ``reference`` (vectorised counting).

        ``max_cells`` bounds the memory of one counting step (hypotheses x reference n-grams).
        """
        ref = self.reference(reference)
        if len(hypotheses) < GROUP_MIN or not ref.packable:
            return [self.score(hypothesis, reference) for hypothesis in hypotheses]
        get = ref.vocabulary.get
        id_lists = [list(map(get, self._tokenizer.tokenize(text), repeat(0))) for text in hypotheses]
        # a reference has at most `length` distinct n-grams of any order: this bounds the count matrix
        step = max(1, max_cells // max(ref.length, 1))
        results: list[LexicalScores] = []
        for start in range(0, len(id_lists), step):
            chunk = id_lists[start : start + step]
            correct = grouped_clipped_matches(chunk, ref).tolist()
            results.extend(self._metrics(ids, counts, ref) for ids, counts in zip(chunk, correct, strict=True))
        return results

    def _metrics(self, hyp_ids: list[int], correct: list[int], ref: ReferenceStats) -> LexicalScores:
        hyp_len = len(hyp_ids)
        total = [max(hyp_len - order, 0) for order in range(MAX_ORDER)]
        # sacrebleu's exp(log(100)) / 100 can give 1.0000000000000004 for a perfect match;
        # ARCHITECTURE.md "Scores" keeps every metric in [0, 1], and the clamp moves nothing by more than a few ulps.
        bleu = [min(value, 1.0) for value in cumulative_bleu(correct, total, hyp_len, ref.length)]
        # ROUGE-1's clipped unigram overlap is BLEU's clipped unigram count; rouge-score's formula follows.
        rouge1 = self._measure(correct[0] / max(hyp_len, 1), correct[0] / max(ref.length, 1))
        rouge_l = 0.0
        if hyp_len and ref.length:
            # Ids make rapidfuzz compare tokens exactly (given strings' lists it would compare their hashes);
            # tokens the reference lacks all share id 0, which no reference token has.
            lcs = self._lcs(ref.token_ids, hyp_ids)
            rouge_l = self._measure(lcs / hyp_len, lcs / ref.length)
        return LexicalScores._make((*bleu, rouge1, rouge_l))


def _recall(precision: float, recall: float) -> float:
    """ROUGE as recall: the share of the reference's tokens (or its LCS) the hypothesis covers."""
    del precision  # the same (precision, recall) signature as rouge-score's fmeasure
    return recall


def score_groups(
    groups: Sequence[tuple[str, Sequence[str]]], tokenizer: str, rouge_measure: RougeMeasure = "f"
) -> list[list[LexicalScores]]:
    """Score each group ``(reference, hypotheses)``; one list of scores per group, in order.

    A module-level function so a process pool can run it.
    """
    scorer = FastScorer(tokenizer, rouge_measure=rouge_measure)
    results = []
    for reference, hypotheses in groups:
        results.append(scorer.score_group(reference, hypotheses))
        scorer.forget_references()
    return results


def make_pool(workers: int) -> ProcessPoolExecutor:
    """A process pool for :func:`score_groups`.

    Forking is the cheapest start (workers inherit the imported libraries), but forking a process
    that runs other threads — torch's pools once an embedder is loaded, a progress bar's monitor —
    can deadlock a child on a lock held at the fork; then workers start from a fresh interpreter
    (forkserver) instead.
    """
    single_threaded = threading.active_count() == 1 and "torch" not in sys.modules
    method = "fork" if single_threaded else "forkserver"
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method))


def _chunks(groups: list[tuple[str, list[str]]], count: int) -> list[list[tuple[str, list[str]]]]:
    """Split ``groups`` into about ``count`` consecutive chunks of similar pair counts."""
    pairs = sum(len(hypotheses) for _, hypotheses in groups)
    target = max(1, -(-pairs // max(count, 1)))
    chunks: list[list[tuple[str, list[str]]]] = [[]]
    size = 0
    for group in groups:
        if size >= target:
            chunks.append([])
            size = 0
        chunks[-1].append(group)
        size += len(group[1])
    return chunks


def score_pairs(
    pairs: Sequence[tuple[str, str]],
    *,
    tokenizer: str = "zh",
    workers: int = 1,
    rouge_measure: RougeMeasure = "f",
) -> list[LexicalScores]:
    """Return the lexical scores of each ``(hypothesis, reference)`` pair, in input order.

    Pairs sharing a reference are scored together so the reference is tokenised once. With
    ``workers > 1`` the work is spread over processes; the numbers do not change. ``rouge_measure``: ROUGE-1 and
    ROUGE-L as F-measure or recall.
    """
    by_reference: dict[str, list[int]] = defaultdict(list)
    for index, (_, reference) in enumerate(pairs):
        by_reference[reference].append(index)
    groups = [(reference, [pairs[i][0] for i in indices]) for reference, indices in by_reference.items()]
    group_scores = (
        score_groups(groups, tokenizer, rouge_measure)
        if workers <= 1
        else _score_in_pool(groups, tokenizer, workers, rouge_measure)
    )
    results: list[LexicalScores | None] = [None] * len(pairs)
    for indices, scores in zip(by_reference.values(), group_scores, strict=True):
        for index, score in zip(indices, scores, strict=True):
            results[index] = score
    return cast("list[LexicalScores]", results)  # every index was filled above


def _score_in_pool(
    groups: list[tuple[str, list[str]]], tokenizer: str, workers: int, rouge_measure: RougeMeasure
) -> list[list[LexicalScores]]:
    # A few chunks per worker balances uneven group sizes without paying per-group IPC.
    chunks = _chunks(groups, workers * 4)
    with make_pool(workers) as pool:
        return _flatten(pool.map(score_groups, chunks, repeat(tokenizer), repeat(rouge_measure)))


def _flatten(chunk_results: Iterable[list[list[LexicalScores]]]) -> list[list[LexicalScores]]:
    return [group for chunk in chunk_results for group in chunk]
