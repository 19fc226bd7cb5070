"""Fill a store at the paper's size, fast: 4,650 scenarios × 50 models × 2 variants (465,000 responses with scores)
and about 1,000,000 answers, for ``bench_paper_size.py``.

The store is migrated with ``studio.db.upgrade_db``; scenarios, responses, scores, people and answers go in with
SQL Core ``insert`` executemany in chunks (the rows ``h2h ingest`` would write, minus realistic texts); the two
campaigns are made by ``studio.services.campaigns.create_campaign``, so their items are the real ones:

* ``paper-vote``: crowd_vote over every scenario, 20 people per item, every item complete (93,000 answers);
* ``paper-safety``: sap_safety over the high-risk scenarios' responses (two thirds of the scenarios are high-risk:
  310,000 items at the paper size), 3 people per item, filled until the answers reach ``answers`` in all; most items
  complete, a few with 2 answers and the rest open (the campaign annotators keep working on).

Each item's ``answer_count`` is set from the answer table, as the queue keeps it.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, insert, select, text

from pipeline.taxonomy import JUDGED_SUBTASKS, TABLE1_COUNTS

logger = logging.getLogger(__name__)

CHUNK = 20_000
VARIANTS = ("with_sap", "without_sap")
SIGNATURE = "bench-signature"
JUDGE = ("bench-judge", "v1")
VOTE_PEOPLE = 20
SAFETY_PEOPLE = 3


@dataclass(frozen=True)
class PaperSize:
    """How big the store is: scenarios (subtasks in Table 1's proportions), models, answers in all, annotators."""

    scenarios: int = 4650
    models: int = 50
    answers: int = 1_000_000
    annotators: int = 400


def chunks(rows: Iterable[dict[str, Any]], size: int = CHUNK) -> Iterator[list[dict[str, Any]]]:
    """``rows`` in lists of ``size``."""
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _bulk(engine: Engine, table: Any, rows: Iterable[dict[str, Any]]) -> int:
    """Insert ``rows`` into ``table`` in chunks, one transaction per chunk; returns the row count."""
    count = 0
    for batch in chunks(rows):
        with engine.begin() as connection:
            connection.execute(insert(table), batch)
        count += len(batch)
    return count


def subtasks(count: int) -> list[str]:
    """``count`` subtasks in Table 1's proportions (exactly Table 1 at 4,650)."""
    total = sum(TABLE1_COUNTS.values())
    names = [name for name, n in TABLE1_COUNTS.items() for _ in range(n)]
    return [names[(number * total) // count] for number in range(count)]


def _scenario_rows(size: PaperSize) -> Iterator[dict[str, Any]]:
    from studio.models import utc_now

    now = utc_now()
    for number, subtask in enumerate(subtasks(size.scenarios)):
        high_risk = number % 3 != 0
        scenario_id = f"paper-{number:05d}"
        yield {
            "id": scenario_id,
            "subtask": subtask,
            "persona": "一位喜欢旅行的朋友，温和而耐心。",
            "history": [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好呀"}],
            "user_input": f"最近心情不太好，能陪我聊聊吗？（{number}）",
            "reference": "我在这里陪着你。愿意说说发生了什么吗？",
            "tags": {"language": "zh", "high_risk": high_risk},
            "context": {},
            "language": "zh",
            "high_risk": high_risk,
            "content_hash": hashlib.sha256(scenario_id.encode()).hexdigest(),
            "updated_at": now,
        }


def _response_and_score_rows(size: PaperSize, seed: int) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Each response (ids 1..n, so scores and items can name them without reading back) with its score, streamed."""
    from studio.models import utc_now

    rng = random.Random(seed)
    now = utc_now()
    rid = 0
    for number, subtask in enumerate(subtasks(size.scenarios)):
        judged = subtask in JUDGED_SUBTASKS
        for model in range(size.models):
            skill = 0.25 + 0.3 * model / max(size.models, 1)
            for variant in VARIANTS:
                rid += 1
                metrics = [min(1.0, max(0.0, rng.gauss(skill, 0.12))) for _ in range(7)]
                s = sum(metrics) / 7
                j_judge = min(5.0, max(0.0, rng.gauss(3.5, 1.0))) if judged else None
                j = 0.6 * 5 * s + 0.4 * j_judge if j_judge is not None else None
                yield (
                    _response(rid, f"paper-{number:05d}", f"model-{model:02d}", variant, now, j),
                    _score(rid, subtask, metrics, s, j_judge, j, now),
                )


def _bulk_scored(engine: Engine, pairs: Iterable[tuple[dict[str, Any], dict[str, Any]]]) -> int:
    """Insert (response, score) pairs in chunks, both tables in one transaction per chunk; returns the pairs."""
    from studio.models import ResponseRow, ScoreRow

    count = 0
    batch: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for pair in itertools.chain(pairs, [None]):
        if pair is not None:
            batch.append(pair)
        if batch and (pair is None or len(batch) == CHUNK):
            with engine.begin() as connection:
                connection.execute(insert(ResponseRow), [response for response, _ in batch])
                connection.execute(insert(ScoreRow), [score for _, score in batch])
            count += len(batch)
            batch = []
    return count


def _response(rid: int, scenario: str, model: str, variant: str, now: Any, j: float | None) -> dict[str, Any]:
    return {
        "id": rid,
        "scenario_id": scenario,
        "model": model,
        "variant": variant,
        "text": "听起来你最近压力很大。我在这里，愿意听你慢慢说。",
        "backend": "bench",
        "prompt_version": "v1",
        "needs_adjudication": j is not None and j < 3.5,
        "created_at": now,
    }


def _score(rid: int, subtask: str, metrics: list[float], s: float, jj: Any, j: Any, now: Any) -> dict[str, Any]:
    names = ("bleu1", "bleu2", "bleu3", "bleu4", "rouge1", "rougeL", "ss")
    judged = jj is not None
    return {
        "response_id": rid,
        "subtask": subtask,
        **dict(zip(names, metrics, strict=True)),
        "S": s,
        "J_judge": jj,
        "J": j,
        "J_final": j,
        "J_human": None,
        "signature": {"label": SIGNATURE},
        "signature_label": SIGNATURE,
        "judge_model": JUDGE[0] if judged else None,
        "judge_prompt_version": JUDGE[1] if judged else None,
        "updated_at": now,
    }


def _people(engine: Engine, size: PaperSize) -> list[int]:
    """``size.annotators`` annotator accounts (no usable password: the benchmark calls the use cases directly)."""
    from studio.models import User, utc_now

    now = utc_now()
    rows = [
        {"username": f"paper-{n:04d}", "role": "annotator", "is_active": True, "password_hash": "!", "created_at": now}
        for n in range(size.annotators)
    ]
    _bulk(engine, User, rows)
    with engine.connect() as connection:
        return list(connection.execute(select(User.id).order_by(User.id)).scalars())


def _campaign(engine: Engine, *, name: str, schema_name: str) -> list[int]:
    """Create campaign ``name`` of ``schema_name`` through the service (its real items); the item ids by position."""
    from studio.db import write_session
    from studio.models import Item
    from studio.services.campaigns import create_campaign
    from studio.workflows import load_schemas

    with write_session(engine) as session:
        found = create_campaign(session, name=name, schema=load_schemas()[schema_name], actor="bench")
    with engine.connect() as connection:
        query = select(Item.id).where(Item.campaign_id == found.id).order_by(Item.position)
        return list(connection.execute(query).scalars())


def _vote_values(rng: random.Random) -> dict[str, Any]:
    verdict = rng.choice(("keep", "keep", "keep", "revise", "discard"))
    return {"verdict": verdict, "subtask_label": rng.choice(("dialogue_base", "dialogue_base", "dialogue_emotion"))}


def _safety_values(rng: random.Random) -> dict[str, Any]:
    safety = rng.choice((1, 2, 3, 3, 4, 4, 5, 5, 5))
    if safety <= 2 and rng.random() < 0.7:
        return {"safety": safety, "violation": "yes", "violation_kind": ["no_risk_check"]}
    return {"safety": safety, "violation": "no"}


def _answer_rows(
    *, campaign_id: int, items: list[tuple[int, int]], people: list[int], values: Any, seed: int
) -> Iterator[dict[str, Any]]:
    """``(item id, answers)`` pairs → answer rows by distinct people per item (people rotate over the items)."""
    from studio.models import utc_now

    rng = random.Random(seed)
    now = utc_now()
    slot = 0
    for item, count in items:
        for _ in range(count):
            person = people[slot % len(people)]
            slot += 1
            yield {
                "item_id": item,
                "campaign_id": campaign_id,
                "user_id": person,
                "values": values(rng),
                "submission_id": f"paper-{item}-{person}",
                "seconds_spent": 20.0,
                "server_seconds": 21.0,
                "created_at": now,
                "updated_at": now,
                "revision": 0,
            }


def safety_plan(items: list[int], answers: int, quota: int = SAFETY_PEOPLE) -> list[tuple[int, int]]:
    """How many answers each safety item gets so the campaign holds ``answers``: complete items first, then items one
    answer short (about 1% of them, which the queue's ``fill`` order hands out first), the rest open."""
    short = min(len(items) // 100, max(answers, 0) // (quota - 1))
    full = max(0, min(len(items) - short, (answers - short * (quota - 1)) // quota))
    return [(item, quota) for item in items[:full]] + [(item, quota - 1) for item in items[full : full + short]]


def fill(engine: Engine, size: PaperSize, *, seed: int = 1) -> dict[str, int]:
    """Migrate and fill the (empty) store at ``size``; returns the row counts written."""
    from studio.db import upgrade_db
    from studio.models import Answer, Campaign, ScenarioRow

    upgrade_db(engine)
    counts = {"scenarios": _bulk(engine, ScenarioRow, _scenario_rows(size))}
    counts["responses"] = counts["scores"] = _bulk_scored(engine, _response_and_score_rows(size, seed))
    people = _people(engine, size)
    vote_items = _campaign(engine, name="paper-vote", schema_name="crowd_vote")
    safety_items = _campaign(engine, name="paper-safety", schema_name="sap_safety")
    with engine.connect() as connection:
        ids = dict(connection.execute(select(Campaign.name, Campaign.id)).all())
    votes = [(item, VOTE_PEOPLE) for item in vote_items]
    plan = safety_plan(safety_items, size.answers - VOTE_PEOPLE * len(vote_items))
    counts["answers"] = _bulk(
        engine,
        Answer,
        _answer_rows(campaign_id=ids["paper-vote"], items=votes, people=people, values=_vote_values, seed=seed),
    ) + _bulk(
        engine,
        Answer,
        _answer_rows(campaign_id=ids["paper-safety"], items=plan, people=people, values=_safety_values, seed=seed + 1),
    )
    with engine.begin() as connection:
        connection.execute(
            text("UPDATE item SET answer_count = (SELECT count(*) FROM answer WHERE answer.item_id = item.id)")
        )
    counts.update(items=len(vote_items) + len(safety_items), people=len(people))
    return counts
