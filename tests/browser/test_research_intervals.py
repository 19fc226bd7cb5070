"""The Research page's Table 2 with intervals in Chromium: every cell with a value reads ``mean [lower, upper]``, a
``Rank (95% range)`` column follows the model, the rank-fragility table sits under it, and the note says how the
intervals were computed. The store is the hostile research run of ``test_research_page`` (its fixtures, reused; there
a one-item cell reads ``v [v, v]``); the numbers themselves are checked against scipy's bootstrap in
``tests/pipeline/test_leaderboard_intervals.py`` and against the service in
``tests/studio/services/test_research_intervals.py``."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.artifacts import save_screenshot
from tests.browser.research_store import MODELS
from tests.browser.test_research_page import FORM, Served, assert_inert, cells, researcher, served, wait_for_rows

pytestmark = pytest.mark.browser
__all__ = ["researcher", "served"]  # the module-scoped fixtures, shared with test_research_page


def test_table2_shows_intervals_rank_ranges_and_fragility(researcher: Any, served: Served) -> None:
    page = researcher
    page.click("#h2h-leaderboard-button")
    wait_for_rows(page, "h2h-leaderboard", FORM)
    header, *rows = cells(page, "h2h-leaderboard")
    assert header[:2] == ["model", "Rank (95% range)"]
    by_model = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    assert set(by_model) == set(MODELS)
    interval = r"\d+\.\d\d \[(\d+\.\d\d), (\d+\.\d\d)\]"
    for row in by_model.values():
        assert re.fullmatch(r"\d+( \(\d+–\d+\))?", row["Rank (95% range)"]), row
        found = re.match(interval, row["dial. base"])
        assert found is not None, row
        value = float(row["dial. base"].split()[0])
        assert float(found.group(1)) <= value <= float(found.group(2))
    fragility_header, *pairs = cells(page, "h2h-leaderboard-fragility")
    assert fragility_header == ["upper", "lower", "gap", "items to swap", "of items", "method"]
    assert len(pairs) == len(MODELS) - 1 and {pair[5] for pair in pairs} <= {"exact", "greedy upper bound"}
    assert [pair[0] for pair in pairs] == [row[0] for row in rows][:-1]  # adjacent pairs in table order
    note = page.inner_text("#h2h-leaderboard-note")
    assert "95% percentile bootstrap over items, stratified by subtask" in note
    assert "1,000 resamples, seed 0" in note and "Fragility: items_to_swap" in note
    assert_inert(page)
    save_screenshot(page, "research-researcher-leaderboard-intervals")
