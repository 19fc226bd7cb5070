"""Issue 21 on the Curate list, in Chromium: the scenarios whose crowd models (Dawid–Skene, MACE) disagree with the
majority come first in the list as it loads, their row says so in plain text (the ``models`` column: "disagree"), and
the "Models disagree" filter narrows the list to them (or to the others). The store is
``test_curate_crowd_models``' (five voters on the dialogue scenarios, b-dialogue-2 the one the models disagree on)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlmodel import select

from studio.models.curation import ScenarioStatus
from studio.ui.tables import MODELS_DISAGREE_MARK, SCENARIO_COLUMNS
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import Studio, sign_in
from tests.browser.test_curate_crowd_models import (
    CURATOR,
    modelled,  # noqa: F401  (the store's fixture, used below)
)
from tests.browser.test_curate_research_ui import choose, read_store, wait_for_text

pytestmark = pytest.mark.browser
DISAGREEING = "b-dialogue-2"
#: The list's rows as Gradio draws them (a virtual body: one ``role=row`` div per row, cells ``cell-<row>-<col>``).
ROWS = "#h2h-scenarios .virtual-row"


def _row_cells(page: Any, index: int) -> dict[str, str]:
    """Row ``index`` of the scenario list as the page shows it, by column name."""
    cells = page.locator(f"#h2h-scenarios [data-testid^='cell-{index}-']").all_inner_texts()
    return dict(zip(SCENARIO_COLUMNS, [cell.strip() for cell in cells], strict=True))


def _listed_ids(page: Any) -> list[str]:
    return [_row_cells(page, index)["id"] for index in range(page.locator(ROWS).count())]


def test_the_list_puts_the_models_disagreement_first_marks_it_and_filters_by_it(
    modelled: Studio,  # noqa: F811  (the fixture imported above)
    page: Any,
) -> None:
    statuses = read_store(modelled, select(ScenarioStatus))
    disagreeing = sorted(row.scenario_id for row in statuses if row.models_disagree)  # type: ignore[attr-defined]
    assert disagreeing == [DISAGREEING]  # the store says so; the list must show it
    sign_in(page, modelled, CURATOR)
    page.get_by_role("tab", name="Curate").click()
    wait_for_text(page, "#h2h-browse-summary", "match")
    wait_for_text(page, ROWS, DISAGREEING)  # the first row, as the page loads (the default order)
    first = _row_cells(page, 0)
    assert first["id"] == DISAGREEING and first["models"] == MODELS_DISAGREE_MARK, first
    total = int(page.inner_text("#h2h-browse-summary").split()[0])
    assert all(_row_cells(page, n)["models"] == "" for n in range(1, page.locator(ROWS).count()))
    assert page.locator(f"{ROWS} b, {ROWS} img").count() == 0  # plain text cells
    save_screenshot(page, "curate-list-models-disagree-first", full_page=False)

    choose(page, "h2h-filter-models-disagree", "yes")
    page.click("#h2h-search")
    wait_for_text(page, "#h2h-browse-summary", "1 match · page 1 of 1")
    assert _listed_ids(page) == [DISAGREEING] and _row_cells(page, 0)["models"] == MODELS_DISAGREE_MARK
    save_screenshot(page, "curate-list-models-disagree-filter", full_page=False)

    choose(page, "h2h-filter-models-disagree", "no")
    page.click("#h2h-search")
    wait_for_text(page, "#h2h-browse-summary", f"{total - 1} match")
    assert DISAGREEING not in _listed_ids(page)
    assert all(_row_cells(page, n)["models"] == "" for n in range(page.locator(ROWS).count()))
