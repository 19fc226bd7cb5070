"""A refine folder for the curation tests, made by the pipeline itself: ``pipeline.curation.refine`` (real
preprocess: a phone number and a name replaced) over :func:`tests.studio.helpers.make_scenarios` with PII added to
two of them, and a pre-screen file written as ``h2h prescreen`` writes it (fixed verdicts: no LLM is called), with
the review queue ``pipeline.curation.review_queue`` builds from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select

from pipeline.curation.records import PairJudgment, PrescreenVerdict, ScenarioReport, ScreenSample
from pipeline.curation.refine import RefineDir, flag_kinds, refine
from pipeline.curation.review_queue import prescreen_queue
from pipeline.jsonl import read_records, write_records
from pipeline.records import Scenario
from studio.db import read_session
from studio.models import Campaign, Item, UserPublic
from studio.services.content import pair_is_swapped
from tests.studio.helpers import answer_all, make_scenarios

PHONE = "13812345678"
#: Each scenario's pre-screen: verdict, votes (keep, revise, discard) and uncertainty (normalised entropy).
VERDICTS: dict[str, tuple[str, tuple[int, int, int], float]] = {
    "dlg-1": ("revise", (1, 2, 0), 0.58),
    "dlg-2": ("keep", (3, 0, 0), 0.0),
    "dlg-3": ("keep", (2, 1, 0), 0.58),
    "iti-1": ("discard", (1, 1, 1), 1.0),
    "iti-2": ("keep", (3, 0, 0), 0.0),
    "iti-3": ("revise", (0, 3, 0), 0.0),
}
REASON = "The reference ignores what the user said about being tired."


def raw_scenarios() -> list[Scenario]:
    """The helpers' six scenarios, dlg-1 with a phone number and iti-1 with a name to replace."""
    scenarios = make_scenarios()
    scenarios[0] = scenarios[0].model_copy(update={"user_input": f"今天好累。有事打我电话{PHONE}。"})
    scenarios[3] = scenarios[3].model_copy(update={"user_input": "我和同事王小明周末去杭州玩两天"})
    return scenarios


def prescreen_verdicts() -> list[PrescreenVerdict]:
    verdicts = []
    for scenario_id, (verdict, (keep, revise, discard), uncertainty) in VERDICTS.items():
        votes = {"keep": keep, "revise": revise, "discard": discard}
        samples = [
            ScreenSample(index=index, raw=f"evidence {index} [[{name}]]", evidence=f"evidence {index}", verdict=name)
            for index, name in enumerate(name for name, count in votes.items() for _ in range(count))
        ]
        verdicts.append(
            PrescreenVerdict(
                id=scenario_id,
                verdict=verdict,  # type: ignore[arg-type]
                votes=votes,  # type: ignore[arg-type]
                uncertainty=uncertainty,
                needs_human=uncertainty > 0.5 or verdict != "keep",
                reasons=[REASON if scenario_id == "dlg-1" else f"{scenario_id}: as the samples say"],
                samples=samples,
                judge_model="judge-test",
                prompt_version="test",
            )
        )
    return verdicts


def write_refine_dir(root: Path) -> RefineDir:
    """Run preprocess through ``refine`` (no judge) into ``root``, then add the pre-screen and its queue."""
    source = root / "raw.jsonl"
    root.mkdir(parents=True, exist_ok=True)
    write_records(source, raw_scenarios())
    folder = RefineDir(root / "refined")
    refine(source, folder, judge=None)
    verdicts = prescreen_verdicts()
    write_records(folder.prescreen, verdicts)
    reports = read_records(folder.report, ScenarioReport)
    write_records(folder.queue, prescreen_queue(verdicts, flag_kinds(reports)))
    return folder


#: Per pairwise item (in queue order): three people's choices and the LLM's winner (None: it contradicted itself).
PLAN: list[tuple[tuple[str, str, str], str | None]] = [
    (("a", "a", "b"), "a"),
    (("b", "b", "b"), "a"),
    (("a", "b", "tie"), "tie"),
    (("a", "a", "a"), None),
    (("tie", "tie", "a"), "tie"),
]


def vote_and_judge(engine: Engine, campaign: str, people: list[UserPublic], pairs_file: Path) -> list[Item]:
    """Three people answer every item of the pairwise ``campaign`` through the real queue as :data:`PLAN` says
    (items past the plan: all "a"), and the LLM's :data:`PLAN` verdicts are written to ``pairs_file`` as
    ``h2h judge-pairs`` writes them (ids ``item-<n>``). Returns the items in position order."""
    with read_session(engine) as session:
        seed = session.execute(select(Campaign.pair_seed).where(Campaign.name == campaign)).scalar_one()
        query = select(Item).join(Campaign).where(Campaign.name == campaign).order_by(Item.position)
        items = list(session.execute(query).scalars())
    positions = {item.id: item.position for item in items}

    def answer(item: Item, _response: Any, person: UserPublic) -> dict[str, Any]:
        plan = PLAN[positions[item.id]][0] if positions[item.id] < len(PLAN) else ("a",) * 3
        side = plan[[p.id for p in people].index(person.id)]
        if side == "tie":
            return {"preference": "tie"}
        return {"preference": "A" if (side == "a") != pair_is_swapped(seed, person.id, item.id) else "B"}

    answer_all(engine, campaign, people, answer)
    judgments = [
        PairJudgment(
            id=f"item-{item.id}",
            winner=winner,  # type: ignore[arg-type]
            consistent=winner is not None,
            needs_human=winner is None,
            uncertainty=0.0 if winner else 1.0,
            order_verdicts={"ab": winner or "a", "ba": winner or "b"},  # type: ignore[dict-item]
            votes={"a": 1},
            samples=[],
            judge_model="judge-test",
            prompt_version="test",
        )
        for item, (_, winner) in zip(items, PLAN, strict=False)
    ]
    write_records(pairs_file, judgments)
    return items
