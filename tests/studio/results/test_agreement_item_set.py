"""One item set and one bootstrap for every agreement figure of a campaign (issue 17, item 4)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine

from studio.cli import build_cli
from studio.db import write_session
from studio.models import CampaignPublic, Item, ResponseRow, UserPublic
from studio.services.campaigns import create_campaign, set_campaign_status
from studio.workflows import load_schemas
from tests.studio.helpers import add_people, answer_all

VERDICTS = ("keep", "revise", "discard")
LABELS = ("dialogue_base", "dialogue_emotion", "itinerary_basic")


@pytest.fixture
def crowd(
    corpus: Engine, campaign: CampaignPublic, password_hash: str
) -> Iterator[tuple[Engine, dict[tuple[int, str], str]]]:
    """A ``crowd`` crowd vote (20 people per item) on the six scenarios — created after ``vote``, so its item ids
    run past 9 — that 20 people answer, the last one only 5 items: five items have 20 votes, one has 19. Yields the
    store and every verdict given, by (item id, annotator)."""
    with write_session(corpus) as session:
        create_campaign(session, name="crowd", schema=load_schemas()["crowd_vote"], people_per_item=20)
    people = add_people(corpus, password_hash, [f"c-{n:02d}" for n in range(1, 21)], "annotator")
    rng = np.random.default_rng(11)
    given: dict[tuple[int, str], str] = {}

    def answer(item: Item, _response: ResponseRow | None, person: UserPublic) -> dict[str, Any]:
        # each scenario has a favourite verdict most people give, so agreement is neither 0 nor 1
        favourite = VERDICTS[(item.id or 0) % 3]
        verdict = favourite if rng.random() < 0.7 else VERDICTS[int(rng.integers(0, 3))]
        given[(int(item.id or 0), person.username)] = verdict
        return {"verdict": verdict, "subtask_label": LABELS[int(rng.integers(0, 3))]}

    answer_all(corpus, "crowd", people[:19], answer)
    answer_all(corpus, "crowd", people[19:], answer, per_person=5)
    yield corpus, given


def cli(*args: str) -> str:
    result = CliRunner().invoke(build_cli(), list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def by_item(given: dict[tuple[int, str], str], items: set[int] | None = None) -> dict[int, list[str]]:
    """The verdicts given, per item (only ``items`` when given)."""
    table: dict[int, list[str]] = {}
    for (item, _annotator), verdict in sorted(given.items()):
        if items is None or item in items:
            table.setdefault(item, []).append(verdict)
    return table


def fleiss_by_hand(ratings: dict[Any, list[str]]) -> tuple[float, float]:
    """(Fleiss' kappa, mean pairwise agreement) written out term by term for raters that differ per item:
    P_i = (sum_j n_ij^2 - n_i) / (n_i (n_i - 1)), p_j = sum_i n_ij / sum_i n_i, over items with n_i >= 2."""
    used = [values for values in ratings.values() if len(values) >= 2]
    categories = sorted({value for values in used for value in values})
    total = sum(len(values) for values in used)
    shares = [sum(values.count(category) for values in used) / total for category in categories]
    per_item = [
        (sum(values.count(category) ** 2 for category in categories) - len(values)) / (len(values) * (len(values) - 1))
        for values in used
    ]
    observed = sum(per_item) / len(per_item)
    chance = sum(share * share for share in shares)
    return (observed - chance) / (1 - chance), observed


def alpha_by_package(ratings: dict[tuple[int, str], str], items: set[int]) -> float:
    """Krippendorff's alpha (nominal) of the verdicts on ``items`` by the ``krippendorff`` package."""
    import krippendorff

    people = sorted({annotator for _item, annotator in ratings})
    columns = sorted(items)
    codes = {verdict: index for index, verdict in enumerate(VERDICTS)}
    matrix = np.full((len(people), len(columns)), np.nan)
    for (item, annotator), verdict in ratings.items():
        if item in items:
            matrix[people.index(annotator), columns.index(item)] = codes[verdict]
    return float(krippendorff.alpha(matrix, level_of_measurement="nominal"))


def test_fleiss_kappa_for_unequal_raters_equals_the_hand_computation() -> None:
    from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss_kappa

    from studio.results.agreement import fleiss_kappa

    # n = 3, 2, 2 (+ one item with a single rater, left out): P = 1/3, 1, 1 -> mean 7/9; p = (4/7, 3/7), Pe = 25/49;
    # kappa = (7/9 - 25/49) / (24/49) = 59/108
    kappa, note = fleiss_kappa(np.array([[2, 1], [2, 0], [0, 2], [1, 0]]))
    assert kappa == pytest.approx(59 / 108, abs=1e-12)
    assert note == "1 item(s) with a single rater left out (no pair to agree)"
    rng = np.random.default_rng(3)
    raters = rng.choice([19, 20], size=40)  # the campaign-wide case: some items 19 raters, some 20
    table = np.stack([rng.multinomial(n, [0.6, 0.3, 0.1]) for n in raters])
    ratings = {
        row: [str(c) for c, count in enumerate(counts) for _ in range(count)] for row, counts in enumerate(table)
    }
    assert fleiss_kappa(table)[0] == pytest.approx(fleiss_by_hand(ratings)[0], abs=1e-12)
    equal = np.stack([rng.multinomial(20, [0.5, 0.3, 0.2]) for _ in range(40)])
    assert fleiss_kappa(equal)[0] == pytest.approx(statsmodels_fleiss_kappa(equal), abs=1e-12)


def test_kappa_over_items_of_19_and_20_raters_is_a_number(
    crowd: tuple[Engine, dict[tuple[int, str], str]], db_url: str, tmp_path: Path
) -> None:
    """Closed with its items below quota decided, the campaign's items have 19 and 20 raters: kappa is computed
    over all of them (no longer blank) and equals the hand computation."""
    store, given = crowd
    assert sorted({len(values) for values in by_item(given).values()}) == [19, 20]
    with write_session(store) as session:
        set_campaign_status(session, name="crowd", status="closed", decide_below_quota=True)
    table = tmp_path / "agreement.csv"
    cli("export", "agreement", "--campaign", "crowd", "-o", str(table), "--db", db_url)
    from studio.results.export_formats import read_table

    verdict = read_table(table).set_index("question").loc["verdict"]
    kappa, observed = fleiss_by_hand(by_item(given))
    assert verdict["fleiss_kappa"] == pytest.approx(kappa, abs=1e-12)
    assert verdict["percent_agreement"] == pytest.approx(observed, abs=1e-12)
    assert verdict["n_items"] == 6 and verdict["item_set"] == "over the 6 complete items (quota 1); no item below quota"


def test_an_item_below_quota_is_left_out_of_every_figure_by_default(
    crowd: tuple[Engine, dict[tuple[int, str], str]], db_url: str, tmp_path: Path, users: dict[str, UserPublic]
) -> None:
    """Open, with a quota of 20: the item with 19 votes is left out of alpha, kappa, percent agreement and the
    per-annotator table, and every front door says so; ``--items all`` takes it in and says that."""
    from studio.db import read_session
    from studio.results.export_formats import read_table
    from studio.ui.research import ResearchTab
    from studio.usecases import research

    store, given = crowd
    complete = {item for item, values in by_item(given).items() if len(values) == 20}
    assert len(complete) == 5
    table, annotators = tmp_path / "agreement.csv", tmp_path / "annotators.csv"
    cli("export", "agreement", "--campaign", "crowd", "-o", str(table), "--annotators", str(annotators), "--db", db_url)
    verdict = read_table(table).set_index("question").loc["verdict"]
    kappa, observed = fleiss_by_hand(by_item(given, complete))
    assert verdict["alpha"] == pytest.approx(alpha_by_package(given, complete), abs=1e-9)
    assert verdict["fleiss_kappa"] == pytest.approx(kappa, abs=1e-12)
    assert verdict["percent_agreement"] == pytest.approx(observed, abs=1e-12)
    assert (verdict["n_items"], verdict["n_items_left_out"], verdict["quota"]) == (5, 1, 20)
    wording = "over the 5 complete items (quota 20); 1 item below quota left out"
    assert verdict["item_set"] == wording
    people = read_table(annotators)
    assert set(people.loc[people["question"] == "verdict", "n_answers"]) == {5}  # not 6: the short item is out
    with read_session(store) as session:
        note = ResearchTab._agreement(session, users["researcher"], {"campaign": "crowd"})[0]
        everything = research.agreement(session, caller=users["researcher"], campaign="crowd", items="all")
    assert wording in note
    every = everything.by_question.set_index("question").loc["verdict"]
    assert (every["n_items"], every["n_items_left_out"], every["items"]) == (6, 0, "all")
    assert every["item_set"] == "over all 6 items answered (items=all), 1 of them below the quota of 20"
    assert every["alpha"] == pytest.approx(alpha_by_package(given, set(by_item(given))), abs=1e-9)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_both_command_line_paths_give_equal_figures(
    crowd: tuple[Engine, dict[tuple[int, str], str]],
    db_url: str,
    tmp_path: Path,
    users: dict[str, UserPublic],
    suffix: str,
) -> None:
    """The same votes through ``h2h agreement`` (the exported file, ``--quota`` at the campaign's complete_at) and
    ``h2h export agreement`` (the store), and the use case the Research page and REST API call: identical alpha,
    interval, kappa and percent agreement for the same seed — over the complete items, and over all of them. The
    campaign's item ids run past 9, where sorting ids as text ("10" < "7") once reordered the bootstrap's units."""
    from studio.db import read_session
    from studio.results.export_formats import read_table
    from studio.usecases import research

    votes = tmp_path / f"votes{suffix}"
    cli("export", "votes", "--campaign", "crowd", "-o", str(votes), "--db", db_url)
    figures = ("alpha", "alpha_ci", "fleiss_kappa", "percent_agreement", "n_items", "n_items_left_out", "item_set")
    for items, quota in (("complete", ["--quota", "20"]), ("all", [])):
        table = tmp_path / f"agreement-{items}.csv"
        cli(
            "export",
            "agreement",
            "--campaign",
            "crowd",
            "--items",
            items,
            "--seed",
            "7",
            "-o",
            str(table),
            "--db",
            db_url,
        )
        stored = read_table(table).set_index("question").loc["verdict"].to_dict()
        stored["alpha_ci"] = json.loads(stored["alpha_ci"])
        args = ["agreement", "--votes", str(votes), "--question", "verdict", "--level", "nominal", "--seed", "7"]
        from_file = json.loads(cli(*args, *quota))
        with read_session(crowd[0]) as session:
            view = research.agreement(session, caller=users["researcher"], campaign="crowd", items=items, seed=7)
        page = view.by_question.set_index("question").loc["verdict"].to_dict()
        page["alpha_ci"] = list(page["alpha_ci"])
        for figure in figures[:-1]:
            assert from_file[figure] == stored[figure] == page[figure], (items, figure)
        assert from_file["alpha_ci"][0] < from_file["alpha"] < from_file["alpha_ci"][1]
        assert stored["item_set"] == page["item_set"]
    assert from_file["item_set"] == "over all 6 items given (no quota given: none left out)"
