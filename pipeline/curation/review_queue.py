"""The order in which people should look at items (FairEval's Human-in-the-Loop Calibration).

Most uncertain first; among equals, the items a person must see (needs_human), then the harsher verdicts
(discard, revise, keep), then the items with more preprocess flags, then the id, so the order is total and
the same on every run. The studio will open its crowd and expert campaigns in this order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pipeline.curation.records import FlagKind, PairJudgment, PrescreenVerdict, QueueItem

_SEVERITY = {"discard": 0, "revise": 1, "None": 2, "keep": 3}


def prescreen_queue(
    verdicts: Sequence[PrescreenVerdict], flags: Mapping[str, Sequence[FlagKind]] | None = None
) -> list[QueueItem]:
    """The queue of pre-screened scenarios; ``flags`` are each scenario's preprocess flag kinds."""
    flags = flags or {}

    def rank_key(verdict: PrescreenVerdict) -> tuple[float, int, int, int, str]:
        severity = _SEVERITY[str(verdict.verdict)]
        return (-verdict.uncertainty, not verdict.needs_human, severity, -len(flags.get(verdict.id, ())), verdict.id)

    items = []
    for rank, verdict in enumerate(sorted(verdicts, key=rank_key), start=1):
        kinds = sorted(set(flags.get(verdict.id, ())))
        votes = ", ".join(f"{name} {count}" for name, count in verdict.votes.items() if count)
        reason = f"LLM verdicts: {votes or 'none readable'}" + (f"; flags: {', '.join(kinds)}" if kinds else "")
        items.append(
            QueueItem(
                rank=rank,
                id=verdict.id,
                source="prescreen",
                uncertainty=verdict.uncertainty,
                needs_human=verdict.needs_human,
                verdict=verdict.verdict,
                flags=kinds,
                reason=reason,
            )
        )
    return items


def pairs_queue(judgments: Sequence[PairJudgment]) -> list[QueueItem]:
    """The queue of judged pairs: inconsistent ones and then the most uncertain first."""
    ordered = sorted(judgments, key=lambda j: (-j.uncertainty, not j.needs_human, j.consistent, j.id))
    items = []
    for rank, judgment in enumerate(ordered, start=1):
        orders = ", ".join(f"{order}: {verdict}" for order, verdict in judgment.order_verdicts.items())
        state = "consistent" if judgment.consistent else "contradicts itself across orders"
        items.append(
            QueueItem(
                rank=rank,
                id=judgment.id,
                source="pairs",
                uncertainty=judgment.uncertainty,
                needs_human=judgment.needs_human,
                verdict=judgment.winner,
                reason=f"judge {state} ({orders})",
            )
        )
    return items
