"""The researcher page without a browser, on the real store (SQLite and PostgreSQL): what its handlers do — the
caller's context opened from the session token, ``studio.usecases.research`` (role checks on every call), the page's
tables, notes, figures and downloads (formula-safe CSV with a BOM, JSONL, Parquet) written only where the server
says: the leaderboard with its coverage, Table 3, Fig. 7, agreement, calibration, progress, distributions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import Engine

from studio.db import read_session, write_session
from studio.errors import InvalidInput, NotAuthenticated, NotFound, PermissionDenied
from studio.models import UserPublic
from studio.results.export_formats import read_table
from studio.results.store_views import score_frame
from studio.services.auth import login
from studio.services.research import ScoreChoices
from studio.ui import research_views as views
from studio.ui import tables
from studio.ui.downloads import new_download_dir, table_file
from studio.ui.research import ResearchTab
from studio.usecases import research
from studio.usecases.context import RequestContext
from tests.studio.helpers import PASSWORD

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
#: The page's choices as its handlers receive them, nothing picked.
NO_CHOICES: dict[str, Any] = {
    "variant": None,
    "signature": None,
    "judge": None,
    "safety_campaign": None,
    "instruction_campaign": None,
    "campaign": None,
    "by_model": False,
    "metric": "S",
    "bins": 20,
}


def token(engine: Engine, username: str) -> str:
    with write_session(engine) as session:
        return login(session, username=username, password=PASSWORD)


def as_caller(engine: Engine, session_token: str | None, use: Any) -> Any:
    """What a handler does: open the token's context (one read session, the caller in it), run ``use``."""
    with RequestContext(engine, session_token).reading() as (session, caller):
        return use(session, caller)


class Page:
    """The Research tab's computations for one signed-in person, as its handlers run them."""

    def __init__(self, engine: Engine, session_token: str | None) -> None:
        self.engine, self.token = engine, session_token

    def run(self, use: Any) -> Any:
        return as_caller(self.engine, self.token, use)

    def score_options(self) -> ScoreChoices:
        return self.run(lambda s, c: research.score_options(s, caller=c))

    def leaderboard(self, **choices: Any) -> tuple[pd.DataFrame, str]:
        view = self.run(lambda s, c: research.leaderboard(s, caller=c, **choices))
        return view.table, views.leaderboard_note(view)

    def safety_table(self, **choices: Any) -> pd.DataFrame:
        return self.run(lambda s, c: research.safety_table(s, caller=c, **choices))

    def instruction_table(self) -> pd.DataFrame:
        return self.run(lambda s, c: research.instruction_table(s, caller=c))

    def instruction_plot(self) -> Path:
        return Path(self.run(lambda s, c: ResearchTab._instruction(s, c, NO_CHOICES))[2])

    def agreement(self, campaign: str | None, resamples: int = 1000) -> tuple[pd.DataFrame, pd.DataFrame]:
        view = self.run(lambda s, c: research.agreement(s, caller=c, campaign=campaign, resamples=resamples))
        return view.by_question, view.annotators

    def calibration(self) -> tuple[pd.DataFrame, pd.DataFrame, Path | None]:
        view = self.run(lambda s, c: research.calibration(s, caller=c))
        plot = self.run(lambda s, c: ResearchTab._calibration(s, c, NO_CHOICES))[2]["value"]
        return pd.DataFrame([view.statistics.to_dict()]), view.rows, Path(plot) if plot else None

    def progress(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        return self.run(lambda s, c: research.progress(s, caller=c))

    def distribution(self, **choices: Any) -> pd.DataFrame:
        return self.run(lambda s, c: research.score_distribution(s, caller=c, **choices))

    def distribution_plot(self, metric: str, bins: int) -> Path:
        values = {**NO_CHOICES, "metric": metric, "bins": bins}
        return Path(self.run(lambda s, c: ResearchTab._distribution(s, c, values))[1])

    def export_table(self, name: str, fmt: str, directory: Path, **choices: Any) -> Path:
        frame = self.run(lambda s, c: research.table(s, caller=c, name=name, **choices))
        return table_file(frame, name, fmt, directory)


def test_only_researchers_curators_and_admins_read_results(
    studied: Engine, users: dict[str, UserPublic], tmp_path: Path
) -> None:
    calls = [
        lambda t: Page(studied, t).score_options(),
        lambda t: Page(studied, t).leaderboard(variant="with_sap"),
        lambda t: Page(studied, t).safety_table(),
        lambda t: Page(studied, t).instruction_table(),
        lambda t: Page(studied, t).agreement("vote", resamples=20),
        lambda t: Page(studied, t).calibration(),
        lambda t: Page(studied, t).progress(),
        lambda t: Page(studied, t).distribution(),
        lambda t: Page(studied, t).export_table("progress_campaigns", "csv", tmp_path),
    ]
    for role in ("annotator", "expert"):
        refused = token(studied, role)
        for call in calls:
            with pytest.raises(PermissionDenied):
                call(refused)
    for call in calls:
        with pytest.raises(NotAuthenticated):
            call("forged")
    assert not list(tmp_path.glob("h2h-*"))
    for role in ("researcher", "curator", "admin"):
        allowed = token(studied, role)
        campaigns = Page(studied, allowed).progress()[0]["campaign"].tolist()
        assert campaigns == ["adj", "if", "sap", "vote", "vote-review"]


def test_leaderboard_table3_and_fig7(studied: Engine, users: dict[str, UserPublic], tmp_path: Path) -> None:
    page = Page(studied, token(studied, "researcher"))
    options = page.score_options()
    variants, signatures = options.variants, options.signatures
    assert (
        variants == ["with_sap", "without_sap"] and len(signatures) == 1 and options.judges == ["judge=judge|prompt=j1"]
    )
    with read_session(studied) as session:
        scores = score_frame(session)
    assert signatures == sorted(set(scores["signature"])) and variants == sorted(set(scores["variant"]))
    with pytest.raises(InvalidInput, match="variant"):
        page.leaderboard()
    board, note = page.leaderboard(variant="with_sap", signature=signatures[0])
    assert board["model"].tolist() == sorted(
        board["model"], key=lambda m: -float(board.set_index("model").loc[m, "overall"])
    )
    assert set(board["model"]) == {"model-alpha", "model-beta"}
    assert {"dialogue_base", "itinerary_basic", "overall"} <= set(board.columns)
    assert "Computed for variant with_sap" in note and "Sorted by overall" in note and "adjudicated" in note

    safety = page.safety_table()
    assert safety["variant"].tolist() == ["with_sap", "without_sap"]
    assert safety.set_index("variant").loc["with_sap", "violation_rate"] == 0.0
    assert safety.set_index("variant").loc["without_sap", "violation_rate"] == 1.0
    by_model = page.safety_table(by_model=True)
    assert set(by_model["model"]) == {"model-alpha", "model-beta"}

    fig7 = page.instruction_table()
    assert fig7.set_index("model").loc["model-alpha", "explicit"] == 5.0
    plot = page.instruction_plot()
    assert plot.name == "instruction_following.png" and plot.read_bytes().startswith(PNG_MAGIC)


def test_agreement_calibration_progress_and_distribution(
    studied: Engine, users: dict[str, UserPublic], tmp_path: Path
) -> None:
    page = Page(studied, token(studied, "researcher"))
    by_question, annotators = page.agreement("vote", resamples=20)
    assert {"verdict", "subtask_label"} <= set(by_question["question"])
    assert {"ann-1", "ann-2"} == set(annotators["annotator"])
    with pytest.raises(InvalidInput, match="campaign"):
        page.agreement(None)
    with pytest.raises(NotFound):
        page.agreement("nope")

    stats, pairs, plot = page.calibration()
    assert stats.loc[0, "n"] == len(pairs) > 0 and set(pairs["J_human"]) == {2.0}
    assert plot is not None and plot.read_bytes().startswith(PNG_MAGIC)

    campaigns, people = page.progress()
    assert campaigns.set_index("campaign").loc["vote", "answers"] == 12
    vote = people[people["campaign"] == "vote"].set_index("annotator")
    assert vote.loc["ann-1", "answers"] == 6 and vote.loc["ann-1", "median_seconds"] == 3.0

    histogram = page.distribution(metric="S", bins=10, variant="with_sap")
    assert histogram.groupby("model")["count"].sum().to_dict() == {"model-alpha": 6, "model-beta": 6}
    picture = page.distribution_plot(metric="S", bins=10)
    assert picture.name == "distribution-S.png" and picture.read_bytes().startswith(PNG_MAGIC)
    with pytest.raises(InvalidInput, match="metric"):
        page.distribution(metric="__class__")


def test_export_tables_in_three_formats(studied: Engine, users: dict[str, UserPublic]) -> None:
    page = Page(studied, token(studied, "researcher"))
    directory = new_download_dir()
    params = {"variant": "with_sap", "campaign": "vote"}
    csv = page.export_table("leaderboard", "csv", directory, **params)
    assert csv == directory / "h2h-leaderboard.csv"
    board = page.leaderboard(variant="with_sap")[0]
    written = read_table(csv)
    assert written["model"].tolist() == board["model"].tolist()
    assert written["overall"].round(9).tolist() == board["overall"].round(9).tolist()  # full precision
    jsonl = page.export_table("agreement", "jsonl", directory, **params)
    assert {json.loads(line)["question"] for line in jsonl.read_text(encoding="utf-8").splitlines()} >= {"verdict"}
    parquet = page.export_table("table3", "parquet", directory, **params)
    assert pd.read_parquet(parquet)["variant"].tolist() == ["with_sap", "without_sap"]
    # a ranking needs a pairwise campaign ("vote" is a crowd vote): refused with words, nothing written
    rankings = {"ranking", "ranking_fragility"}
    for table in rankings:
        with pytest.raises(InvalidInput, match="pairwise"):
            page.export_table(table, "csv", directory, **params)
    for table in set(research.TABLE_NAMES) - rankings:
        assert page.export_table(table, "csv", directory, **params).exists()
    with pytest.raises(InvalidInput, match="table"):
        page.export_table("../secrets", "csv", directory)
    with pytest.raises(InvalidInput, match="format"):
        page.export_table("leaderboard", "exe", directory, **params)
    assert sorted(path.name for path in directory.iterdir()) == sorted(
        {f"h2h-{table}.csv" for table in set(research.TABLE_NAMES) - rankings}
        | {"h2h-agreement.jsonl", "h2h-table3.parquet"}
    )


def test_a_formula_model_name_is_neutralised_in_csv(
    tmp_path: Path, users: dict[str, UserPublic], store: Engine
) -> None:
    from pipeline.records import Response, Score, ScoreSignature
    from pipeline.rundir import RunDir, model_dump_line
    from studio.services.ingest import ingest_run
    from tests.studio.helpers import make_scenarios

    scenario = make_scenarios()[0]
    run = RunDir(tmp_path / "run").ensure()
    evil = "=cmd|' /C calc'!A0"
    response = Response(
        scenario_id=scenario.id, model=evil, variant="with_sap", backend="t", prompt_version="p", text="hi"
    )
    score = Score(
        scenario_id=scenario.id,
        model=evil,
        variant="with_sap",
        subtask=scenario.subtask,
        bleu1=0.5,
        bleu2=0.5,
        bleu3=0.5,
        bleu4=0.5,
        rouge1=0.5,
        rougeL=0.5,
        ss=0.5,
        S=0.5,
        signature=ScoreSignature(sacrebleu="2.4", rouge_score="0.1.2", tokenizer="t", embedder="e"),
    )
    for path, records in ((run.scenarios, [scenario]), (run.responses, [response]), (run.scores, [score])):
        path.write_text(model_dump_line(records[0]) + "\n", encoding="utf-8")
    ingest_run(store, run)
    page = Page(store, token(store, "researcher"))
    path = page.export_table("leaderboard", "csv", tmp_path)
    assert read_table(path)["model"].tolist() == ["'" + evil]
    assert page.leaderboard()[0]["model"].tolist() == [evil]


HOSTILE = "[Session expired - sign in again](http://evil.example/phish)<form action=x><input name=pw></form>${1}"


def board_view(*, pending: dict[str, int], counted: dict[str, int], awaiting: dict[str, int]) -> Any:
    """A LeaderboardView over itinerary_advanced only: per model, items counted and pending there."""
    from pipeline.leaderboard import COLUMNS, Leaderboard
    from studio.services.research import LeaderboardView

    models = list(counted)
    frames = []
    for per_model in (counted, pending):
        frame = pd.DataFrame(0, index=models, columns=list(COLUMNS[1:]))
        for column in ("itinerary_advanced", "itinerary_avg", "overall"):
            frame[column] = [per_model[model] for model in models]
        frames.append(frame.rename_axis("model").reset_index())
    table = pd.DataFrame({"model": models, **{column: [float("nan")] * len(models) for column in COLUMNS[1:]}})
    for column in ("itinerary_advanced", "overall"):  # itinerary_avg: none over 1 of 5 subtasks (issue 17 item 3)
        table[column] = [82.5 if counted[model] else float("nan") for model in models]
    board = Leaderboard(table=table, counted=frames[0], pending=frames[1])
    return LeaderboardView(board=board, adjudicated=1, awaiting=awaiting, applied={"variant": "with_sap"})


def test_leaderboard_cells_show_coverage_and_partial_columns_are_marked() -> None:
    assert views.coverage_cell(82.5, 7, 0) == "82.50"
    assert views.coverage_cell(82.5, 6, 1) == "82.50 (6/7)"
    assert views.coverage_cell(float("nan"), 0, 7) == "– (0/7)"
    assert views.coverage_cell(float("nan"), 0, 0) == ""
    view = board_view(counted={"full": 7, HOSTILE: 1}, pending={"full": 0, HOSTILE: 6}, awaiting={HOSTILE: 5})
    shown = views.leaderboard_display(view)
    assert list(shown.columns) == ["model", "itin. advanced (III) *", "itin. avg *", "overall *", "pending"]
    rows = shown.set_index("model")
    assert rows.loc["full", "itin. advanced (III) *"] == "82.50" and rows.loc["full", "pending"] == "none"
    assert rows.loc[HOSTILE, "itin. advanced (III) *"] == "82.50 (1/7)"
    assert rows.loc[HOSTILE, "pending"] == "5 awaiting adjudication, 1 unscored"
    note = views.leaderboard_note(view)
    assert "6 item(s) pending, left out of every mean: 5 awaiting adjudication" in note and "1 unscored" in note
    assert "Not like for like: 1 of 2 model(s)" in note and "Sorted by overall" in note
    assert "Columns marked *: itinerary advanced, itinerary avg, overall." in note  # the full names
    assert "itin. = itinerary" in note  # the short headers' legend
    assert (
        rows.loc["full", "itin. avg *"] == "– (1/5 subtasks)"
        and rows.loc["full", "overall *"] == "82.50 (1/11 subtasks)"
    )
    complete = board_view(counted={"full": 7}, pending={"full": 0}, awaiting={})
    assert list(views.leaderboard_display(complete).columns) == [  # averages over some subtasks stay marked
        "model",
        "itin. advanced (III)",
        "itin. avg *",
        "overall *",
        "pending",
    ]
    assert "Every item is counted" in views.leaderboard_note(complete)


def test_notes_show_data_as_escaped_text() -> None:
    note = views.note_html([f"Computed for {HOSTILE}"])
    assert "<form" not in note and "<input" not in note and "${" not in note
    assert "&lt;form action=x&gt;" in note and "&#36;&#123;1&#125;" in note
    applied = views.applied_line({"variant": "with_sap", "signature": HOSTILE, "judge": None}, views.PICKER_LABELS)
    assert applied == f"Computed for variant with_sap · score signature {HOSTILE} · judge (none)."


def test_every_subtab_says_which_pickers_it_uses_and_why_it_ignores_the_others() -> None:
    for tab, (uses, why) in views.TAB_PICKERS.items():
        note = views.picker_note(tab)
        for label in views.PICKER_LABELS.values():
            assert label in note, (tab, label)
        assert ("Ignores" in note) == (len(uses) < len(views.PICKER_LABELS)), tab
        assert why[:20] in note, tab


def test_table3_shows_readable_headers_n_and_formatted_numbers() -> None:
    frame = pd.DataFrame(
        {
            "variant": ["with_sap", "without_sap"],
            "responses": [30, 29],
            "safety": [4.98765, 2.7],
            "violation_rate": [0.0, 2 / 3],
            "BLEU-4": [36.2465, 17.2481],
            "ROUGE-L": [50.0232, float("nan")],
            "SS": [68.7815, 55.5555],
        }
    )
    shown = views.table3_display(frame)
    assert list(shown.columns) == [
        "Variant",
        "n (rated responses)",
        "Mean safety (1–5)",
        "Violation rate",
        "BLEU-4",
        "ROUGE-L",
        "SS",
    ]
    assert shown.values.tolist() == [
        ["with_sap", "30", "4.99", "0.0%", "36.25", "50.02", "68.78"],
        ["without_sap", "29", "2.70", "66.7%", "17.25", "", "55.56"],
    ]


def test_judge_vs_human_says_why_n_is_zero_and_how_to_get_pairs() -> None:
    from studio.results.calibration import Calibration
    from studio.services.research_quality import CalibrationView

    empty = CalibrationView(
        statistics=Calibration(0, None, None, None, None, None),
        rows=pd.DataFrame(),
        adjudicated=2,
        adjudicated_without_judge=2,
        awaiting=61,
    )
    note = views.calibration_note(empty, {"variant": "with_sap"})
    assert "no item has both a judge score and an expert score (n = 0)" in note
    assert "2 item(s) are adjudicated, 2 of them without a judge score, and 61 flagged item(s)" in note
    assert "adjudication campaign" in note and "h2h aggregate" in note
    two = CalibrationView(Calibration(2, None, None, None, None, 0.5), pd.DataFrame(), 2, 0, 0)
    assert "n = 2: correlations need at least 3 items" in views.calibration_note(two, {})
    assert views.calibration_display(two).iloc[0].tolist() == ["2", "", "", "", "", "0.500"]


def test_toasts_show_data_as_text() -> None:
    from studio.ui.calls import toast_text

    assert toast_text("signature: present: <a href='http://evil.example'>x</a> & more") == (
        "signature: present: &lt;a href='http://evil.example'&gt;x&lt;/a&gt; &amp; more"
    )


def test_every_table2_column_has_a_short_header_and_the_widths_fill_the_table() -> None:
    from pipeline.leaderboard import COLUMNS

    headers = [views.short_header(column) for column in COLUMNS]
    assert len(set(headers)) == len(COLUMNS)  # one name each (both "init." columns keep their dimension)
    assert headers[:4] == ["model", "dial. base", "dial. emotion", "dial. schedule"] and headers[-1] == "overall"
    assert max(len(word) for header in headers for word in header.split()) <= 14  # "(III)", "refinement"
    frame = pd.DataFrame({"model": ["x" * 60, "m"], "dial. base": ["82.50 (6/7)", "70.00"], "pending": ["none", "3"]})
    widths = tables.fitted_widths(frame, max_chars=20)
    expected = [100 * 22 / 38, 100 * 7 / 38, 100 * 9 / 38]  # model cut at 20 (+2), "82.50"/"(6/7)" 5, "pending" 7
    assert [float(width.rstrip("%")) for width in widths] == pytest.approx(expected, abs=0.01)
