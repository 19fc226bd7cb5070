"""``h2h judge-pairs``: each pair judged in both orders, k samples each (FairEval's BPC and MEC).

The judge ends with ``[[A]]``, ``[[B]]`` or ``[[C]]`` (tie), A being the reply shown first (MT-bench's convention).
Order ``ab`` shows ``response_a`` first, order ``ba`` shows ``response_b`` first; each sample's verdict is mapped back
to the pair ("a", "b", "tie"). Each order's majority is its verdict; the pair has a winner only when both orders
agree (``consistent``); a judge that contradicts itself across orders gives no winner and sends the pair to people.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.curation.faireval import (
    PAIR_CATEGORIES,
    combine_orders,
    order_majority,
    parse_pair_answer,
    uncertainty,
    underlying,
)
from pipeline.curation.records import PAIR_VERDICTS, PairInput, PairJudgment, PairOrder, PairSample, PairVerdict
from pipeline.generation.base import Backend, Message, SamplingParams
from pipeline.llm import AnswerCache, Ask, AskStats, Prompt, ask_all, ask_digest, load_prompt

PAIR_PROMPT = "judge_pair"
ORDERS: tuple[PairOrder, ...] = ("ab", "ba")
#: Above this uncertainty a consistent pair still goes to people.
NEEDS_HUMAN_ABOVE = 0.5


def pair_sampling(index: int, samples: int, temperature: float) -> SamplingParams:
    """One sample's parameters: greedy when a single sample is asked, else ``temperature`` with seed = index."""
    return SamplingParams(temperature=temperature if samples > 1 else 0.0, top_p=1.0, max_tokens=800, seed=index)


def pair_messages(pair: PairInput, order: PairOrder, prompt: Prompt) -> list[Message]:
    """The judge's messages with the replies in ``order`` (labelled A and B as shown)."""
    first, second = (pair.response_a, pair.response_b) if order == "ab" else (pair.response_b, pair.response_a)
    body = (
        f"[User's message]\n{pair.prompt.strip()}\n\n"
        f"[The Start of Reply A]\n{first.strip()}\n[The End of Reply A]\n\n"
        f"[The Start of Reply B]\n{second.strip()}\n[The End of Reply B]"
    )
    return [{"role": "system", "content": prompt.text}, {"role": "user", "content": body}]


def judge_pair(
    pair_id: str, raws: dict[PairOrder, list[str]], *, judge_model: str, prompt_version: str
) -> PairJudgment:
    """Combine one pair's raw answers (per order, in sample order) into its judgment."""
    samples: list[PairSample] = []
    per_order: dict[PairOrder, list[PairVerdict]] = {order: [] for order in ORDERS}
    first_picks = decisive = 0
    for order in ORDERS:
        for index, raw in enumerate(raws[order]):
            shown, error = parse_pair_answer(raw)
            verdict = underlying(order, shown) if shown else None
            samples.append(PairSample(order=order, index=index, raw=raw, shown=shown, verdict=verdict, error=error))
            if verdict is not None:
                per_order[order].append(verdict)
            if shown in ("A", "B"):
                decisive += 1
                first_picks += shown == "A"
    order_verdicts = {order: order_majority(per_order[order]) for order in ORDERS}
    winner, consistent = combine_orders(order_verdicts["ab"], order_verdicts["ba"])
    every = per_order["ab"] + per_order["ba"]
    spread = uncertainty(every, PAIR_CATEGORIES) if every else 1.0
    counts = Counter(every)
    unread = any(sample.verdict is None for sample in samples)
    return PairJudgment(
        id=pair_id,
        winner=winner,
        consistent=consistent,
        needs_human=not consistent or unread or spread > NEEDS_HUMAN_ABOVE,
        uncertainty=1.0 if not consistent and spread == 0 else spread,
        order_verdicts=order_verdicts,
        votes={verdict: counts.get(verdict, 0) for verdict in PAIR_VERDICTS},
        first_shown_rate=round(first_picks / decisive, 6) if decisive else None,
        samples=samples,
        judge_model=judge_model,
        prompt_version=prompt_version,
    )


@dataclass
class PairsSummary:
    """Pairs judged, consistent ones, winners, how many need a person, and the calls it took."""

    written: int = 0
    consistent: int = 0
    winners: Counter[str] = field(default_factory=Counter)
    needs_human: int = 0
    incomplete: list[str] = field(default_factory=list)
    stats: AskStats = field(default_factory=AskStats)


def judge_pairs(
    pairs: Sequence[PairInput],
    *,
    judge_model: str,
    backend: Backend,
    cache_path: Path,
    samples: int = 1,
    temperature: float = 0.7,
    progress: bool = False,
) -> tuple[list[PairJudgment], PairsSummary]:
    """Judge every pair in both orders with ``samples`` samples each; pairs missing an answer are ``incomplete``."""
    prompt = load_prompt(PAIR_PROMPT)
    asks = {
        pair.id: {
            order: [
                Ask(pair_messages(pair, order, prompt), pair_sampling(index, samples, temperature))
                for index in range(samples)
            ]
            for order in ORDERS
        }
        for pair in pairs
    }
    everything = [ask for by_order in asks.values() for group in by_order.values() for ask in group]
    answers, stats = ask_all(
        backend, judge_model, everything, AnswerCache(cache_path), desc="judge-pairs", progress=progress
    )
    summary = PairsSummary(stats=stats)
    judgments = []
    for pair_id, by_order in asks.items():
        raws = {
            order: [answers.get(ask_digest(judge_model, ask.messages, ask.sampling)) for ask in group]
            for order, group in by_order.items()
        }
        if any(answer is None for group in raws.values() for answer in group):
            summary.incomplete.append(pair_id)
            continue
        texts = {order: [answer.raw for answer in group if answer is not None] for order, group in raws.items()}
        judgment = judge_pair(pair_id, texts, judge_model=judge_model, prompt_version=prompt.version)
        judgments.append(judgment)
        summary.consistent += judgment.consistent
        summary.winners[str(judgment.winner)] += 1
        summary.needs_human += judgment.needs_human
    summary.written = len(judgments)
    return judgments, summary
