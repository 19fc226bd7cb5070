"""The store's answers, items and scores as pandas DataFrames: one query per table family, no per-item queries.

These are the bridge from the database to the pure statistics of ``studio.results``: answers come out long form
(one row per answer, its ``values`` dict intact) and :func:`answers_by_question` splits them per question at the
level of measurement the campaign's schema gives each question.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from sqlalchemy import Boolean, and_, case, func, literal, select
from sqlmodel import Session, col

from pipeline.taxonomy import JUDGE_SCORE_NAMES, JUDGED_SUBTASKS, METRIC_NAMES
from studio.models import Answer, Campaign, Item, ResponseRow, ScenarioRow, ScoreRow, User
from studio.workflows import FreeText, MultipleChoice, NumberRange, Pairwise, Rating, SingleChoice, WorkflowSchema

ANSWER_COLUMNS: tuple[str, ...] = (
    "answer_id",
    "item",
    "user_id",
    "annotator",
    "role",
    "values",
    "seconds_spent",
    "server_seconds",
    "scenario_id",
    "response_id",
    "response_b_id",
    "is_gold",
    "model",
    "variant",
    "subtask",
    "instruction_kind",
    "stopped",
)
SCORE_COLUMNS: tuple[str, ...] = (
    "score_id",
    "response_id",
    "scenario_id",
    "model",
    "variant",
    "subtask",
    "needs_adjudication",
    *METRIC_NAMES,
    *JUDGE_SCORE_NAMES,
    "signature",
    "judge_model",
    "judge_prompt_version",
)
#: The numeric score columns (automatic metrics, then the judge's and experts' scores): float, NaN when missing.
SCORE_METRICS: tuple[str, ...] = (*METRIC_NAMES, *JUDGE_SCORE_NAMES)


def _frame(session: Session, query: Any, columns: tuple[str, ...]) -> pd.DataFrame:
    """Run a column query on the session's connection (Core rows: no ORM loading cost) into a DataFrame."""
    rows = session.connection().execute(query).all()
    return pd.DataFrame.from_records([tuple(row) for row in rows], columns=list(columns))


def _plain_frame(session: Session, query: Any, columns: tuple[str, ...]) -> pd.DataFrame:
    """:func:`_frame` for a query of plain columns (numbers, text, booleans; no JSON, no timestamps): the driver's rows
    go to pandas as they are, without SQLAlchemy's per-row processing (at the paper's 232,500 scores per variant
    that processing took longer than the query). Booleans come back as bool (SQLite's driver gives 0/1)."""
    result = session.connection().execute(query)
    rows = result.cursor.fetchall() if result.cursor is not None else []
    frame = pd.DataFrame.from_records(rows, columns=list(columns))
    for name, column in zip(columns, query.selected_columns, strict=True):
        if isinstance(column.type, Boolean) and frame[name].dtype != bool:
            frame[name] = pd.Series(
                [None if value is None else bool(value) for value in frame[name].tolist()],
                index=frame.index,
                dtype=object,
            )
    return frame


def campaign_answers(session: Session, campaign: Campaign) -> pd.DataFrame:
    """Every answer of ``campaign`` with its item's target and the target's model, variant, subtask and kind.

    One row per answer (columns :data:`ANSWER_COLUMNS`); ``item`` is the item id, ``annotator`` the username,
    ``values`` the stored answer dict; model and variant are None for scenario targets; ``stopped`` is True where the
    workflow's ``stopping:`` rule stopped the item early (it is then complete whatever its count:
    :func:`studio.results.aggregate.complete_answers`). One query.
    """
    query = (
        select(
            col(Answer.id),
            col(Answer.item_id),
            col(Answer.user_id),
            col(User.username),
            col(User.role),
            col(Answer.values),
            col(Answer.seconds_spent),
            col(Answer.server_seconds),
            col(Item.scenario_id),
            col(Item.response_id),
            col(Item.response_b_id),
            col(Item.is_gold),
            col(ResponseRow.model),
            col(ResponseRow.variant),
            col(ScenarioRow.subtask),
            col(ScenarioRow.instruction_kind),
            col(Item.stopped_at).is_not(None),
        )
        .join(Item, col(Item.id) == col(Answer.item_id))
        .join(User, col(User.id) == col(Answer.user_id))
        .join(ScenarioRow, col(ScenarioRow.id) == col(Item.scenario_id))
        .outerjoin(ResponseRow, col(ResponseRow.id) == col(Item.response_id))
        .where(col(Answer.campaign_id) == campaign.id)
        .order_by(col(Answer.item_id), col(User.username))
    )
    return _frame(session, query, ANSWER_COLUMNS)


def campaign_items(session: Session, campaign: Campaign) -> pd.DataFrame:
    """The campaign's items: item, scenario_id, response_id, response_b_id, is_gold, gold_answers, answer_count."""
    query = (
        select(
            col(Item.id),
            col(Item.scenario_id),
            col(Item.response_id),
            col(Item.response_b_id),
            col(Item.is_gold),
            col(Item.gold_answers),
            col(Item.answer_count),
        )
        .where(col(Item.campaign_id) == campaign.id)
        .order_by(col(Item.position))
    )
    columns = ("item", "scenario_id", "response_id", "response_b_id", "is_gold", "gold_answers", "answer_count")
    return _frame(session, query, columns)


def _score_columns() -> dict[str, Any]:
    """:data:`SCORE_COLUMNS` → the SQL expression of each (the score row joined to its response)."""
    return {
        "score_id": col(ScoreRow.id),
        "response_id": col(ScoreRow.response_id),
        "scenario_id": col(ResponseRow.scenario_id),
        "model": col(ResponseRow.model),
        "variant": col(ResponseRow.variant),
        "subtask": col(ScoreRow.subtask),
        "needs_adjudication": col(ResponseRow.needs_adjudication),
        **{name: getattr(ScoreRow, name) for name in SCORE_METRICS},
        "signature": col(ScoreRow.signature_label),
        "judge_model": col(ScoreRow.judge_model),
        "judge_prompt_version": col(ScoreRow.judge_prompt_version),
    }


def score_frame(
    session: Session,
    *,
    campaign: Campaign | None = None,
    variant: str | None = None,
    columns: tuple[str, ...] = SCORE_COLUMNS,
    present: tuple[str, ...] = (),
) -> pd.DataFrame:
    """Stored scores with their response's key and adjudication flag, ordered by response; one query.

    Only the scores of ``campaign``'s response items / of ``variant`` when given, and only rows where every column
    in ``present`` has a value. ``columns`` picks a subset of :data:`SCORE_COLUMNS` (fewer columns load faster at
    paper scale); ``signature`` is the signature's label; score metrics come back as float (NaN when missing).
    """
    expressions = _score_columns()
    unknown = [name for name in (*columns, *present) if name not in expressions]
    if unknown:
        raise ValueError(f"unknown score column(s): {', '.join(unknown)}")
    query = (
        select(*(expressions[name] for name in columns))
        .join(ResponseRow, col(ResponseRow.id) == col(ScoreRow.response_id))
        .order_by(col(ScoreRow.response_id))
    )
    if campaign is not None:
        in_campaign = select(col(Item.response_id)).where(col(Item.campaign_id) == campaign.id)
        query = query.where(col(ScoreRow.response_id).in_(in_campaign))
    if variant is not None:
        query = query.where(col(ResponseRow.variant) == variant)
    query = query.where(*(expressions[name].is_not(None) for name in present))
    frame = _plain_frame(session, query, columns)
    for column in SCORE_METRICS:
        if column in frame.columns:
            frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    return frame


#: The columns of :func:`leaderboard_cells`: the group's key, then its tallies.
CELL_COLUMNS: tuple[str, ...] = (
    "model",
    "subtask",
    "variant",
    "signature",
    "judge_model",
    "judge_prompt_version",
    "items",
    "counted",
    "value_sum",
    "awaiting",
    "adjudicated",
)


def leaderboard_cells(session: Session, *, variant: str | None = None) -> pd.DataFrame:
    """Table 2's per-item values summed in the store, one row per (model, subtask, variant, signature, judge): one
    GROUP BY query instead of a load of every score (at the paper's size 232,500 per variant).

    Columns :data:`CELL_COLUMNS`. An item's value is ``pipeline.leaderboard.item_values``'s: 100*S, or 100*J_final/5
    on itinerary I–III unless the item is flagged (``needs_adjudication``) without J_human — then it is pending, as is
    an item without its S or J_final. ``items`` counts the group's items, ``counted`` those with a value,
    ``value_sum`` their sum (NaN when none), ``awaiting`` the flagged items without J_human and without a value,
    ``adjudicated`` those with J_human. ``judge_model``/``judge_prompt_version`` are None outside itinerary I–III (as
    ``studio.services.research.with_judge_labels`` labels only those). Only ``variant``'s scores when given.
    """
    judged = col(ScoreRow.subtask).in_(sorted(JUDGED_SUBTASKS))
    awaiting = and_(col(ResponseRow.needs_adjudication), col(ScoreRow.J_human).is_(None))
    j_value = case((awaiting, None), else_=col(ScoreRow.J_final) * literal(100.0) / literal(5.0))
    value = case((judged, j_value), else_=col(ScoreRow.S) * literal(100.0))
    keys = (
        col(ScoreRow.subtask),  # first: SQLite then groups along the scores' subtask index
        col(ResponseRow.model),
        col(ResponseRow.variant),
        col(ScoreRow.signature_label),
        case((judged, col(ScoreRow.judge_model)), else_=None),
        case((judged, col(ScoreRow.judge_prompt_version)), else_=None),
    )
    tallies = (
        func.count(),
        func.count(value),
        func.sum(value),
        func.sum(case((and_(awaiting, value.is_(None)), 1), else_=0)),
        func.count(col(ScoreRow.J_human)),
    )
    query = (
        select(*keys, *tallies)
        .select_from(ScoreRow)
        .join(ResponseRow, col(ResponseRow.id) == col(ScoreRow.response_id))
        .group_by(*keys)
    )
    if variant is not None:
        # ``|| ''`` on SQLite: its planner would otherwise drive the join through the (model, variant) index and read
        # every response row at random (1.1-1.8 s at the paper's size) instead of scanning the scores and finding each
        # response by its key (0.4 s)
        sqlite = session.get_bind().dialect.name == "sqlite"
        query = query.where((col(ResponseRow.variant).concat("") if sqlite else col(ResponseRow.variant)) == variant)
    result = session.connection().execute(query)
    rows = result.cursor.fetchall() if result.cursor is not None else []
    frame = pd.DataFrame.from_records(rows, columns=["subtask", "model", *CELL_COLUMNS[2:]]).loc[:, list(CELL_COLUMNS)]
    for column in ("items", "counted", "awaiting", "adjudicated"):
        frame[column] = pd.to_numeric(frame[column]).fillna(0).astype(int)
    frame["value_sum"] = pd.to_numeric(frame["value_sum"], errors="coerce").astype(float)
    return frame


def question_levels(schema: WorkflowSchema) -> tuple[dict[str, str], dict[str, list[Any]]]:
    """Each agreeable question's level of measurement, and the value order of ordinal label questions.

    Choice questions are nominal unless their ``level`` says ordinal (then the option order is the value order);
    ratings are ordinal, numbers interval (each as its ``level`` says); a multiple-choice question becomes one
    nominal yes/no question per option, named ``question=option``; free text is skipped.
    """
    levels: dict[str, str] = {}
    orders: dict[str, list[Any]] = {}
    for question in schema.questions:
        if isinstance(question, FreeText):
            continue
        if isinstance(question, MultipleChoice):
            levels.update({f"{question.id}={value}": "nominal" for value in question.option_values()})
        elif isinstance(question, SingleChoice):
            levels[question.id] = question.level
            if question.level == "ordinal":
                orders[question.id] = question.option_values()
        elif isinstance(question, Rating | NumberRange | Pairwise):
            levels[question.id] = question.level
    return levels, orders


def answers_by_question(answers: pd.DataFrame, schema: WorkflowSchema) -> pd.DataFrame:
    """Long form per question: columns item, annotator, question, value (one row per answer and question).

    Multiple-choice answers are split into ``question=option`` rows valued "yes"/"no" — but only for people who
    were asked the question (they answered it), so a skipped conditional question is no answer, not "no".
    Free-text answers keep their question id and text (for comments); unanswered questions give no row.
    """
    multiple = {q.id: q.option_values() for q in schema.questions if isinstance(q, MultipleChoice)}
    rows: list[tuple[Any, Any, str, Any]] = []
    columns = (answers["item"].tolist(), answers["annotator"].tolist(), answers["values"].tolist())
    for item, annotator, values in zip(*columns, strict=True):
        for question, value in (values or {}).items():
            if question in multiple:
                chosen = set(value or [])
                rows.extend(
                    (item, annotator, f"{question}={option}", "yes" if option in chosen else "no")
                    for option in multiple[question]
                )
            else:
                rows.append((item, annotator, question, value))
    return pd.DataFrame(rows, columns=["item", "annotator", "question", "value"])


def gold_values(items: pd.DataFrame, question: str) -> dict[Any, Any]:
    """The known answer to ``question`` of each gold item (item id → value), from :func:`campaign_items`."""
    gold = items[items["is_gold"].astype(bool)]
    return {
        item: answers[question]
        for item, answers in zip(gold["item"], gold["gold_answers"], strict=True)
        if isinstance(answers, dict) and question in answers
    }
