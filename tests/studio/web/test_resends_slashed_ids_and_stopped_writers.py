"""Issue 18's small items (10, and 7's file part): a resent submission with other values, S after a save, scenario ids
holding "/", exports stopped midway, and a deeply nested line in a REST import.

Each test failed on the code before its fix: a resend with other values answered 200 with the old values; a skip
arriving after the save said "Skipped."; ``GET /v1/curation/scenarios/a/b`` was 404; an export stopped by an error
or SIGTERM left ``OUT.tmp`` beside its output; and a 3,000-deep line made the import raise ``RecursionError`` (500).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, select
from sqlmodel import col

from pipeline.jsonl import atomic_target, write_records
from studio.db import create_db_engine, read_session
from studio.models import CampaignPublic, Skip, UserPublic
from studio.services.answers import answer_by_submission_id
from studio.services.ingest import ingest_run
from studio.settings import get_settings
from studio.ui.annotate import ANSWERED_BEFORE_SKIP, AnnotateTab
from studio.web.api import create_api
from tests.browser.store_fixture import build_store
from tests.repo import REPO_ROOT
from tests.serving import serve_in_thread
from tests.studio.helpers import PASSWORD, make_scenarios, write_run
from tests.studio.ui.test_annotate import answers_of, built_tab, choose, shown_item, skip, submit, token_for

VOTE = {"verdict": "revise", "subtask_label": "dialogue_base"}
REPO = REPO_ROOT


def serve_api(engine: Engine, db_url: str) -> Iterator[str]:
    """The REST API mounted at /api (as studio.web.app does), served by uvicorn in a thread."""
    app = FastAPI()
    app.mount("/api", create_api(get_settings(database_url=db_url), engine=engine))
    with serve_in_thread(app) as url:
        yield f"{url}/api/v1"


@pytest.fixture
def base_url(corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], db_url: str) -> Iterator[str]:
    yield from serve_api(corpus, db_url)


def client_for(base_url: str, username: str) -> httpx.Client:
    token = httpx.post(f"{base_url}/login", json={"username": username, "password": PASSWORD}).json()["token"]
    return httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


# --- 1. a resent submission_id with other values -------------------------------------------------------------------


def test_a_resent_submission_with_other_values_is_a_conflict_naming_the_stored_answer(
    base_url: str, corpus: Engine
) -> None:
    with client_for(base_url, "annotator") as client:
        item = client.get("/campaigns/vote/next").json()
        body = {"item_id": item["item_id"], "lease_id": item["lease_id"], "submission_id": "s-1", "answers": VOTE}
        created = client.post("/campaigns/vote/answers", json=body)
        assert created.status_code == 201, created.text
        other = client.post("/campaigns/vote/answers", json=body | {"answers": VOTE | {"verdict": "keep"}})
        assert other.status_code == 409, other.text
        detail = other.json()["detail"]
        assert detail.startswith("submission_id: this submission_id was already stored with other values: ")
        assert '"verdict": "revise"' in detail and "PUT" in detail
        same = client.post("/campaigns/vote/answers", json=body)  # an identical resend stays idempotent
        assert same.status_code == 200 and same.json() == created.json()
        # After a revision, resending the first submit is still that submit (200, the answer as it is now) ...
        revised = client.put(f"/campaigns/vote/answers/{item['item_id']}", json={"answers": VOTE | {"verdict": "keep"}})
        assert revised.status_code == 200 and revised.json()["changed"] is True
        again = client.post("/campaigns/vote/answers", json=body)
        assert again.status_code == 200 and again.json()["values"]["verdict"] == "keep"
        # ... and a resend with yet other values is a conflict naming the answer as stored now.
        third = client.post("/campaigns/vote/answers", json=body | {"answers": VOTE | {"verdict": "discard"}})
        assert third.status_code == 409 and '"verdict": "keep"' in third.json()["detail"]
    with read_session(corpus) as session:
        stored = answer_by_submission_id(session, "s-1")
    assert stored is not None and stored.values == VOTE | {"verdict": "keep"} and stored.revision == 1


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


# --- 3. scenario ids holding "/" ------------------------------------------------------------------------------------


@pytest.fixture
def slashed_api(engine: Engine, users: dict[str, UserPublic], db_url: str, tmp_path: Path) -> Iterator[str]:
    """The API over a corpus whose first scenario's id is ``a/b``."""
    scenarios = make_scenarios()
    scenarios[0] = scenarios[0].model_copy(update={"id": "a/b"})
    ingest_run(engine, write_run(tmp_path / "run", scenarios=scenarios))
    yield from serve_api(engine, db_url)


def test_a_scenario_whose_id_holds_a_slash_is_reachable_over_rest(slashed_api: str) -> None:
    with client_for(slashed_api, "curator") as client:
        for path in ("/curation/scenarios/a/b", "/curation/scenarios/a%2Fb"):
            shown = client.get(path)
            assert shown.status_code == 200, (path, shown.text)
            assert shown.json()["scenario"]["id"] == "a/b"
        decided = client.post("/curation/scenarios/a/b/decision", json={"action": "reject", "reason": "test"})
        assert decided.status_code == 200, decided.text
        assert decided.json()["scenario_id"] == "a/b" and decided.json()["status"] == "rejected"
        assert client.get("/curation/scenarios/a/b").json()["status"]["status"] == "rejected"
        assert client.get("/curation/scenarios/a/b/c").status_code == 404  # no such scenario, not another route
        assert client.get("/curation/scenarios/dlg-2").status_code == 200  # plain ids as before


# --- 4. an export stopped midway ------------------------------------------------------------------------------------


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


def test_a_writer_stopped_by_an_error_or_ctrl_c_leaves_the_output_as_it_was_and_no_temporary(tmp_path: Path) -> None:
    output = tmp_path / "votes.jsonl"
    output.write_text("the export before\n", encoding="utf-8")

    def records(stop: BaseException) -> Iterator[dict[str, Any]]:
        yield {"row": 1}
        raise stop

    for stop in (RuntimeError("the store went away"), KeyboardInterrupt()):
        with pytest.raises(type(stop)):
            write_records(output, records(stop))
        assert output.read_text(encoding="utf-8") == "the export before\n" and leftovers(tmp_path) == []
    with atomic_target(output) as temporary:
        assert temporary.parent == output.parent and temporary.name.startswith(".votes.jsonl.")
        assert temporary.name != output.name + ".tmp" and str(os.getpid()) in temporary.name
        temporary.write_text("new\n", encoding="utf-8")
    assert output.read_text(encoding="utf-8") == "new\n" and leftovers(tmp_path) == []


#: ``h2h export votes`` as the console script runs it, its rows held after the first one until SIGTERM arrives (the
#: only change: the store's rows come slowly, so the signal lands while the file is being written).
SLOW_EXPORT = textwrap.dedent(
    """
    import sys, time
    import studio.services.votes_export as exports

    real_rows = exports.vote_rows

    def slow_rows(*args, **kwargs):
        for number, row in enumerate(real_rows(*args, **kwargs)):
            yield row
            if number == 0:
                print("WRITING", flush=True)
                time.sleep(60)

    exports.vote_rows = slow_rows
    from pipeline.cli import main
    sys.argv = ["h2h", *sys.argv[1:]]
    main()
    """
)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_an_export_stopped_by_sigterm_leaves_the_output_as_it_was_and_no_temporary(
    voted: Engine, db_url: str, tmp_path: Path, suffix: str
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    output = folder / f"votes{suffix}"
    output.write_bytes(b"the export before\n")
    command = [sys.executable, "-c", SLOW_EXPORT, "export", "votes", "--campaign", "vote", "-o", str(output)]
    process = subprocess.Popen(
        [*command, "--db", db_url], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "WRITING"
        deadline = time.monotonic() + 10
        while not leftovers(folder) and time.monotonic() < deadline:  # the first row is on its way to the disk
            time.sleep(0.05)
        [temporary] = leftovers(folder)
        assert temporary.startswith(f".votes{suffix}.{process.pid}.")
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "the output file was left as it was" in err
    assert output.read_bytes() == b"the export before\n" and leftovers(folder) == []


# --- 5. a deeply nested line in a REST import -----------------------------------------------------------------------


def test_a_deeply_nested_line_in_a_rest_import_is_a_422_naming_its_line(base_url: str) -> None:
    good = make_scenarios()[0].model_copy(update={"id": "fresh-1"}).model_dump_json()
    deep = '{"id": "deep", "history": ' + "[" * 3000 + "]" * 3000 + "}"
    body = f"{good}\n{deep}\n".encode()
    with client_for(base_url, "curator") as client:
        reply = client.post("/admin/imports", files=[("files", ("deep.jsonl", body))], data={"confirm": "true"})
        assert reply.status_code == 422, reply.text
        assert "deep.jsonl:2: (line): JSON nested too deeply" in "\n".join(reply.json()["problems"])
        assert reply.json()["stored"] is False
        assert client.get("/curation/scenarios/fresh-1").status_code == 404  # nothing was stored
