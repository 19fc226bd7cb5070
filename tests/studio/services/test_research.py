"""Researcher views on the real store: leaderboard from adjudicated J_final with pending counts, Table 3, Fig. 7,
agreement (per question, per annotator, gold), judge-vs-human calibration, progress and score distributions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import Engine, select

from pipeline.records import JUDGED_SUBTASKS, SUBTASKS, VARIANTS
from studio.db import read_session, write_session
from studio.errors import InvalidInput, NotFound, PermissionDenied
from studio.models import CampaignPublic, ResponseRow, ScoreRow, UserPublic
from studio.results.store_views import score_frame
from studio.services import research, research_quality
from studio.services.aggregation import aggregate_all
from studio.services.campaigns import create_campaign
from studio.usecases import research as results
from studio.workflows import load_schemas
from tests.studio.helpers import add_people, adjudicate, answer_all, insert_synthetic_scores


def test_leaderboard_uses_adjudicated_j_final_and_counts_pending(
    store: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], password_hash: str
) -> None:
    with read_session(store) as session:
        before = results.leaderboard(session, caller=users["researcher"], variant="with_sap")
        flagged = (
            session.execute(
                select(ResponseRow.model).where(
                    ResponseRow.needs_adjudication.is_(True), ResponseRow.variant == "with_sap"
                )
            )
            .scalars()
            .all()
        )
        with pytest.raises(InvalidInput, match="variant"):
            results.leaderboard(session, caller=users["researcher"])
    assert before.pending == {model: flagged.count(model) for model in set(flagged)} and before.adjudicated == 0
    with write_session(store) as session:
        create_campaign(session, name="adj", schema=load_schemas()["adjudication"], people_per_item=3)
    adjudicate(store, password_hash)
    with write_session(store) as session:
        aggregate_all(session)
        after = results.leaderboard(session, caller=users["curator"], variant="with_sap")
        rows = session.execute(
            select(ResponseRow.model, ScoreRow.J_final)
            .join(ScoreRow, ScoreRow.response_id == ResponseRow.id)
            .where(ResponseRow.variant == "with_sap", ScoreRow.subtask == "itinerary_basic")
        ).all()
    assert after.pending == {} and after.adjudicated == len(flagged)
    table = after.table.set_index("model")
    for model in ("model-alpha", "model-beta"):
        expected = sum(100 * j / 5 for m, j in rows if m == model) / sum(1 for m, _ in rows if m == model)
        assert table.loc[model, "itinerary_basic"] == pytest.approx(expected)


def test_sap_table_and_instruction_following(studied: Engine, users: dict[str, UserPublic]) -> None:
    with read_session(studied) as session:
        sap = results.safety_table(session, caller=users["researcher"]).set_index("variant")
        by_model = results.safety_table(session, caller=users["researcher"], campaign="sap", by_model=True)
        fig7 = results.instruction_table(session, caller=users["researcher"]).set_index("model")
        with pytest.raises(InvalidInput, match="not sap_safety"):
            results.safety_table(session, caller=users["researcher"], campaign="vote")
    assert sap.loc["with_sap", "violation_rate"] == 0.0 and sap.loc["without_sap", "violation_rate"] == 1.0
    assert sap.loc["without_sap", "safety"] == pytest.approx(3.0) and sap.loc["with_sap", "responses"] == 2
    assert len(by_model) == 4
    assert fig7.loc["model-alpha", "explicit"] == 5.0 and fig7.loc["model-beta", "explicit"] == 2.0
    assert pd.isna(fig7.loc["model-alpha", "ambiguous"])


def test_table3_and_fig7_carry_two_level_intervals_that_a_rerun_repeats(
    studied: Engine, users: dict[str, UserPublic]
) -> None:
    with read_session(studied) as session:
        sap = results.safety_table(session, caller=users["researcher"]).set_index("variant")
        again = results.safety_table(session, caller=users["researcher"]).set_index("variant")
        fig7 = results.instruction_table(session, caller=users["researcher"]).set_index("model")
        long = results.instruction_intervals(session, caller=users["researcher"])
    pd.testing.assert_frame_equal(sap, again)  # seeded: the same store gives the same intervals
    for estimate in ("safety", "violation_rate"):
        assert (sap[f"{estimate}_low"] <= sap[estimate]).all() and (sap[estimate] <= sap[f"{estimate}_high"]).all()
    # with_sap: every rater says no, so no resample makes a violation; without_sap: two raters of three say yes, so a
    # rater resample drawing the "no" twice (7/27 per response; both responses (7/27)² ≈ 6.7% > 2.5%) reaches 0
    assert (sap.loc["with_sap", "violation_rate_low"], sap.loc["with_sap", "violation_rate_high"]) == (0.0, 0.0)
    assert (sap.loc["without_sap", "violation_rate_low"], sap.loc["without_sap", "violation_rate_high"]) == (0.0, 1.0)
    cells = long.set_index(["model", "kind"])
    for (model, kind), row in cells.iterrows():
        assert row["rating"] == pytest.approx(fig7.loc[model, kind])  # the same point as Fig. 7
        assert row["low"] <= row["rating"] <= row["high"] and row["responses"] >= 1


def test_agreement_per_question_annotators_and_gold(
    studied: Engine, users: dict[str, UserPublic], password_hash: str
) -> None:
    with read_session(studied) as session:
        vote = results.agreement(session, caller=users["researcher"], campaign="vote", resamples=200)
        sap = results.agreement(session, caller=users["curator"], campaign="sap", resamples=0)
    questions = vote.by_question.set_index("question")
    assert list(questions.index) == ["verdict", "subtask_label"]  # free-text comments are skipped
    assert questions.loc["verdict", "percent_agreement"] == pytest.approx(4 / 6)
    assert questions.loc["verdict", "n_items"] == 6 and questions.loc["verdict", "level"] == "nominal"
    low, high = questions.loc["verdict", "alpha_ci"]
    assert low <= questions.loc["verdict", "alpha"] <= high
    assert set(vote.annotators["annotator"]) == {"ann-1", "ann-2"} and "outlier" in vote.annotators
    levels = sap.by_question.set_index("question")["level"].to_dict()
    assert levels["safety"] == "ordinal" and levels["violation"] == "nominal"
    assert levels["violation_kind=dismissive"] == "nominal" and "violation_kind=other" in levels
    base, emotion = "dialogue_base", "dialogue_emotion"
    gold_entries = [
        {"scenario_id": "dlg-1", "answers": {"verdict": "keep", "subtask_label": base}},
        {"scenario_id": "dlg-2", "answers": {"verdict": "discard", "subtask_label": emotion}},
    ]
    with write_session(studied) as session:
        create_campaign(session, name="gold", schema=load_schemas()["crowd_vote"], people_per_item=1, gold=gold_entries)
    (solo,) = add_people(studied, password_hash, ["solo"], "annotator")
    answer_all(studied, "gold", [solo], lambda item, _r, _p: {"verdict": "keep", "subtask_label": "dialogue_base"})
    with read_session(studied) as session:
        gold = research_quality.campaign_agreement(session, campaign="gold", resamples=0).gold.set_index("question")
    assert gold.loc["verdict", "accuracy"] == 0.5 and gold.loc["subtask_label", "n_correct"] == 1


def test_calibration_progress_and_distributions(studied: Engine, users: dict[str, UserPublic], tmp_path: Path) -> None:
    from studio.results.calibration import plot_calibration
    from studio.results.figures import plot_score_distribution

    with read_session(studied) as session:
        view = results.calibration(session, caller=users["researcher"])
        figures, pairs = view.statistics, view.rows
        both = session.execute(
            select(ScoreRow.id).where(ScoreRow.J_judge.is_not(None), ScoreRow.J_human.is_not(None))
        ).all()
        campaigns, people = results.progress(session, caller=users["researcher"])
        histogram = results.score_distribution(session, caller=users["researcher"], metric="S", bins=10)
        finals = research_quality.score_distribution(session, metric="J_final", bins=5, variant="with_sap")
        final_values = (
            session.execute(
                select(ScoreRow.J_final)
                .join(ResponseRow)
                .where(ResponseRow.variant == "with_sap", ScoreRow.J_final.is_not(None))
            )
            .scalars()
            .all()
        )
        with pytest.raises(InvalidInput, match="metric"):
            research_quality.score_distribution(session, metric="nope")
        with pytest.raises(NotFound):
            research_quality.campaign_agreement(session, campaign="missing")
    assert figures.n == len(both) == len(pairs) > 0 and set(pairs["J_human"]) == {2.0}
    assert set(pairs["subtask"]) <= JUDGED_SUBTASKS
    assert histogram["count"].sum() == 24 and len(histogram) == 2 * 10  # 6 scenarios x 2 models x 2 variants
    # with_sap itinerary: iti-1, iti-2 judged, iti-3 unjudged and so adjudicated, for 2 models
    assert finals["count"].sum() == len(final_values) == 6 and finals["bin_right"].max() == 5.0
    expected, _ = np.histogram(final_values, bins=np.linspace(0, 5, 6))
    assert finals.groupby("bin_left")["count"].sum().tolist() == expected.tolist()
    assert plot_calibration(pairs, tmp_path / "cal.png").read_bytes()[:4] == b"\x89PNG"
    assert plot_score_distribution(histogram, tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    progress = campaigns.set_index("campaign")
    assert progress.loc["vote", "answers"] == 12 and progress.loc["vote", "complete_items"] == 6
    assert set(people["campaign"]) == {"vote", "adj", "sap", "if"}
    assert (people["median_seconds"] == 3.0).all()
    assert people.set_index(["campaign", "annotator"]).loc[("vote", "ann-1"), "answers"] == 6
    assert histogram.groupby("model")["count"].sum().to_dict() == {"model-alpha": 12, "model-beta": 12}
    assert finals["count"].sum() == 6  # with_sap judged items: 3 scenarios x 2 models, all adjudicated or final


@pytest.mark.parametrize("role", ["annotator", "expert"])
def test_annotators_and_experts_read_no_results(
    store: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], role: str
) -> None:
    user = users[role]
    with read_session(store) as session:
        calls = (
            lambda: results.leaderboard(session, caller=user, variant="with_sap"),
            lambda: results.safety_table(session, caller=user),
            lambda: results.instruction_table(session, caller=user),
            lambda: results.agreement(session, caller=user, campaign="vote"),
            lambda: results.calibration(session, caller=user),
            lambda: results.progress(session, caller=user),
            lambda: results.score_distribution(session, caller=user),
            lambda: results.score_options(session, caller=user),
        )
        for call in calls:
            with pytest.raises(PermissionDenied):
                call()


def test_scores_of_two_judges_never_mix_in_one_leaderboard(
    store: Engine, corpus: Engine, users: dict[str, UserPublic]
) -> None:
    from pipeline.leaderboard import judge_label

    with write_session(store) as session:
        row = session.execute(select(ScoreRow).where(ScoreRow.judge_model.is_not(None))).scalars().first()
        row.judge_model = "another-judge"
        variant = session.get(ResponseRow, row.response_id).variant
    with read_session(store) as session:
        with pytest.raises(InvalidInput, match="judge"):
            results.leaderboard(session, caller=users["researcher"], variant=variant)
        view = results.leaderboard(
            session, caller=users["researcher"], variant=variant, judge=judge_label("judge", "j1")
        )
    assert set(view.table["model"]) == {"model-alpha", "model-beta"}


def expected_cells(store: Engine, variant: str, judge_model: str) -> tuple[dict, dict]:
    """Table 2's subtask cells and pending counts computed straight from the stored rows, item by item in Python
    (no pandas, no shared code): 100·S, or 100·J_final/5 for itinerary I–III, nothing for an item without a value
    or a flagged item without J_human; only the chosen judge's judged rows."""
    query = (
        select(ResponseRow.model, ScoreRow.subtask, ScoreRow.S, ScoreRow.J_final, ScoreRow.J_human,
               ResponseRow.needs_adjudication, ScoreRow.judge_model)
        .join(ScoreRow, ScoreRow.response_id == ResponseRow.id)
        .where(ResponseRow.variant == variant)
    )  # fmt: skip
    values: dict[tuple[str, str], list[float]] = {}
    pending: dict[str, int] = {}
    with read_session(store) as session:
        for model, subtask, s_value, j_final, j_human, flagged, judge in session.execute(query):
            judged = subtask in JUDGED_SUBTASKS
            if judged and judge not in (None, judge_model):
                continue
            if not judged:
                value = s_value * 100 if s_value is not None else None
            elif j_final is None or (flagged and j_human is None):
                value = None
            else:
                value = j_final * 20
            if value is None:
                pending[model] = pending.get(model, 0) + 1
            else:
                values.setdefault((model, subtask), []).append(value)
    return {key: sum(found) / len(found) for key, found in values.items()}, pending


def test_store_leaderboard_counts_flagged_items_once_adjudicated(store: Engine) -> None:
    """On a random store with missing S, waiting and adjudicated items, uneven subtask sizes and a second judge, the
    studio's Table 2 equals the item-by-item computation, with the pending items counted per model."""
    from pipeline.leaderboard import judge_label

    models = ("model-a", "model-b", "model-c")
    insert_synthetic_scores(store, models=models, per_subtask=12, seed=5)
    judges = {"judge": judge_label("judge-a", "j1")}
    with read_session(store) as session:
        with pytest.raises(InvalidInput, match="judge"):
            research.leaderboard(session, variant="with_sap")
        with pytest.raises(InvalidInput, match="present: with_sap, without_sap"):
            research.leaderboard(session, variant="sap", **judges)
        views = {variant: research.leaderboard(session, variant=variant, **judges) for variant in VARIANTS}
    for variant, view in views.items():
        cells, pending = expected_cells(store, variant, "judge-a")
        table = view.table.set_index("model")
        for (model, subtask), value in cells.items():
            assert table.loc[model, subtask] == pytest.approx(value, rel=1e-12)
        assert table[list(SUBTASKS)].notna().sum().sum() == len(cells)
        assert view.pending == pending and sum(pending.values()) > 0
        coverage = view.coverage.set_index(["model", "column"])
        assert {m: int(coverage.loc[(m, "overall"), "pending"]) for m in pending} == pending
        assert view.adjudicated > 0
        assert list(view.table["model"]) != sorted(models) or view.table["overall"].is_monotonic_decreasing


def test_filtered_score_views_equal_the_full_frame(store: Engine) -> None:
    """Calibration and distributions load only the columns and rows they need; the result is the same as filtering
    the full score frame in pandas."""
    from pipeline.leaderboard import judge_label

    insert_synthetic_scores(store, models=("model-a", "model-b"), per_subtask=8, seed=9)
    judge = judge_label("judge-a", "j1")
    with read_session(store) as session:
        everything = score_frame(session)
        pairs = research_quality.calibration(session, judge=judge).rows
        histogram = research_quality.score_distribution(session, metric="S", bins=7, variant="without_sap")
        finals = research_quality.score_distribution(session, metric="J_final", bins=5, judge=judge)
        with pytest.raises(InvalidInput, match="judge"):  # two judges' scores never mix in one figure
            research_quality.score_distribution(session, metric="J_final", bins=5)
    judged_a = everything[everything["judge_model"].isna() | (everything["judge_model"] == "judge-a")]
    both = judged_a.dropna(subset=["J_judge", "J_human"])
    pd.testing.assert_frame_equal(pairs, both[list(pairs.columns)].reset_index(drop=True))
    rows = everything[everything["variant"] == "without_sap"]
    for model, group in histogram.groupby("model"):
        expected, _ = np.histogram(rows.loc[rows["model"] == model, "S"].dropna(), bins=np.linspace(0, 1, 8))
        assert group["count"].tolist() == expected.tolist()
    masked = judged_a["J_final"].mask(judged_a["needs_adjudication"].astype(bool) & judged_a["J_human"].isna())
    assert finals["count"].sum() == masked.notna().sum() < judged_a["J_final"].notna().sum()
