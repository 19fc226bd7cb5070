"""Enter then S on the annotate page (issue 18, item 10): a skip that arrives after the save keeps the answer, writes
no skip and does not say "Skipped." (before the fix it did).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, select
from sqlmodel import col

from studio.db import create_db_engine, read_session
from studio.models import Skip
from studio.ui.annotate import ANSWERED_BEFORE_SKIP, AnnotateTab
from tests.browser.store_fixture import build_store
from tests.studio.ui.test_annotate import answers_of, built_tab, choose, shown_item, skip, submit, token_for

VOTE = {"verdict": "revise", "subtask_label": "dialogue_base"}


# --- 2. S after the answer was saved --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def annotate_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    store = build_store(Path(tmp_path_factory.mktemp("skip-after-save")), annotators=2, experts=1)
    built = create_db_engine(store.database_url)
    yield built
    built.dispose()


@pytest.fixture(scope="module")
def tab(annotate_store: Engine) -> AnnotateTab:
    return built_tab(annotate_store)


def test_a_skip_arriving_after_the_save_keeps_the_answer_and_does_not_say_skipped(
    annotate_store: Engine, tab: AnnotateTab
) -> None:
    """Enter then S: the submit is handled first, then the skip, which still names the item just answered."""
    token = token_for(annotate_store, "annotator01")
    page = choose(tab, token, "test-crowd_vote")
    saved = submit(tab, token, page[0], VOTE)
    late_skip = skip(tab, token, page[0])
    assert answers_of(annotate_store, "annotator01") == [(shown_item(page).item_id, VOTE)]
    assert "Skipped." not in late_skip[4] and ANSWERED_BEFORE_SKIP in late_skip[4]
    assert shown_item(late_skip).item_id == shown_item(saved).item_id  # the next item, as after the save
    with read_session(annotate_store) as session:  # no Skip row for the answered item (it would reorder the queue)
        assert session.execute(select(Skip).where(col(Skip.item_id) == shown_item(page).item_id)).first() is None
    skipped = skip(tab, token, late_skip[0])  # a real skip still says so
    assert skipped[4].startswith('<div class="h2h-message h2h-info">Skipped.')
