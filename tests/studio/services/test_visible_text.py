"""Text that deceives the eye (issue 18, item 9): one rule shows every character a person cannot see as ``⟨U+202E⟩``
wherever the studio shows a text or a name, names and ids holding one are refused at ingest, and a username that
passes for another (mixed scripts, or the same UTS #39 confusables skeleton) is refused.

Checked on the code before: the Curate lists, the Research tables and the audit log handed Gradio the raw U+202E
(only the annotate page drew it); U+200D, U+00AD and U+2061–2064 passed even there; ``h2h ingest`` stored a model
named ``m-a\\u202e``; ``annаtator01`` (a Cyrillic ``а``) was created beside ``annotator01``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, func, select, update

from studio.cli import build_cli
from studio.db import read_session, write_session
from studio.errors import Conflict, InvalidInput
from studio.models import AuditLog, ResponseRow, ScenarioRow, UserPublic
from studio.services.text import invisible_chars, name_problem, visible_text
from studio.services.usernames import check_new_username, skeleton, visible_username
from studio.ui import admin_views, curate_views, decision_views, research_views, tables
from studio.ui.render import escape_text, render_item
from studio.usecases import admin, curate
from tests.studio.conftest import MODELS, write_run
from tests.studio.web.test_admin_api import admin_api  # noqa: F401  (the admin API's fixture, used below)

#: The characters the issue names, one of each kind: bidi override and isolate, marks, zero-width space, non-joiner
#: and joiner, word joiner, the invisible operators, BOM, soft hyphen, a tag character, a control.
DECEIVING = [
    "\u202e", "\u202a", "\u2066", "\u2069", "\u200e", "\u200f", "\u061c", "\u200b", "\u200c", "\u200d", "\u2060",
    "\u2061", "\u2062", "\u2063", "\u2064", "\ufeff", "\u00ad", "\U000e0041", "\x1b",
]  # fmt: skip
OVERRIDE = "\u202e"


def marker(char: str) -> str:
    return f"⟨U+{ord(char):04X}⟩"


def cells(frame: pd.DataFrame) -> list[str]:
    """Every header and cell of ``frame`` as text."""
    return [str(column) for column in frame.columns] + [str(cell) for cell in frame.to_numpy().ravel()]


def assert_shown(texts: list[str], char: str = OVERRIDE) -> None:
    """``char`` appears only as its marker in ``texts``, and the marker is there."""
    joined = "\n".join(texts)
    assert char not in joined
    assert marker(char) in joined


# --- the rule ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("char", DECEIVING, ids=lambda char: f"U+{ord(char):04X}")
def test_every_deceiving_character_is_written_out_in_text_and_in_html(char: str) -> None:
    text = f"abc{char}txt.exe"
    assert visible_text(text) == f"abc{marker(char)}txt.exe"
    assert invisible_chars(text) == [char]
    assert escape_text(text) == f'abc<span class="h2h-invisible">{marker(char)}</span>txt.exe'
    assert visible_text(visible_text(text)) == visible_text(text)  # idempotent: a marker hides nothing


def test_what_people_write_stays_as_written() -> None:
    family, rainbow, sinhala = "👨\u200d👩\u200d👧", "🏳\ufe0f\u200d🌈", "ශ්\u200dරී"  # joiners that join
    for text in (family, rainbow, sinhala, "中文　全角，标点。", "tab\tand\nlines", "café e\u0301", "x\ufe0f"):
        assert visible_text(text) == text
    assert visible_text("a\u200db") == "a⟨U+200D⟩b"  # a joiner between letters joins nothing: shown


def test_names_take_the_stricter_rule() -> None:
    assert visible_text("gpt\u00a0x", name=True) == "gpt⟨U+00A0⟩x"  # a no-break space in a name
    assert visible_username("annotator01\u200d") == "annotator01⟨U+200D⟩"
    assert name_problem("demo-warm-companion") is None and name_problem("模型 A") is None
    why = name_problem(f"m-a{OVERRIDE}")
    assert why is not None and "U+202E RIGHT-TO-LEFT OVERRIDE" in why and "m-a⟨U+202E⟩" in why


# --- where texts are shown --------------------------------------------------------------------------------------


def test_the_annotate_page_shows_the_characters_it_let_through(corpus: Engine) -> None:
    content = {"user_input": "soft\u00adhyphen f\u2061(x) a\u200db", "response": {"text": "ok\u2064"}}
    html = render_item(content)
    for char in ("\u00ad", "\u2061", "\u200d", "\u2064"):
        assert char not in html and marker(char) in html


def test_every_table_component_writes_out_what_any_handler_returns() -> None:
    import gradio as gr

    with gr.Blocks():
        component = tables.table("t", "h2h-test-table", ["model"])
    data = component.postprocess(pd.DataFrame({f"m{OVERRIDE}": [f"gpt{OVERRIDE}4", 1.5, None]}))
    assert data.headers == ["m⟨U+202E⟩"]
    assert data.data == [["gpt⟨U+202E⟩4"], [1.5], [None]]


def _legacy_texts(engine: Engine) -> None:
    """Texts stored before the rule: a user input, a response's model name, an audit entry's actor and reason."""
    with write_session(engine) as session:
        session.execute(update(ScenarioRow).where(ScenarioRow.id == "dlg-1").values(user_input=f"abc{OVERRIDE}txt.exe"))
        session.execute(update(ResponseRow).where(ResponseRow.model == MODELS[0]).values(model=f"m-a{OVERRIDE}"))
        session.add(
            AuditLog(
                actor=f"cura{OVERRIDE}tor",
                action="scenario.decide",
                entity="scenario",
                entity_id="dlg-1",
                detail={"reason": f"fine{OVERRIDE}", "before": "pending", "after": "accepted"},
            )
        )


def test_the_curate_lists_and_audit_logs_hand_gradio_the_markers(corpus: Engine, users: dict[str, UserPublic]) -> None:
    _legacy_texts(corpus)
    with read_session(corpus) as session:
        scenarios = tables.scenario_list(curate.browse_scenarios(session, caller=users["curator"]))
        responses = tables.table_page(
            curate.browse_responses(session, caller=users["curator"]), tables.RESPONSE_COLUMNS
        )
        detail_audit = curate_views.audit_frame(curate.audit_entries(session, caller=users["admin"]))
        admin_audit = admin_views.audit_page(admin.audit_log(session, caller=users["admin"]))
    assert_shown(cells(scenarios.frame))
    assert "abc⟨U+202E⟩txt.exe" in cells(scenarios.frame)
    assert_shown(cells(responses.frame))
    assert "m-a⟨U+202E⟩" in cells(responses.frame)
    for frame in (detail_audit, admin_audit.frame):
        assert_shown(cells(frame))
        assert "cura⟨U+202E⟩tor" in cells(frame)


def test_the_research_tables_and_decisions_hand_gradio_the_markers() -> None:
    model = f"m-a{OVERRIDE}"
    table3 = pd.DataFrame({"variant": ["with_sap"], "model": [model], "responses": [3], "safety": [4.5]})
    fig7 = pd.DataFrame({"model": [model], "implicit_help": [3.25]})
    assert_shown(cells(research_views.table3_display(table3)))
    assert_shown(cells(research_views.instruction_display(fig7)))
    hidden = "\u2063"  # INVISIBLE SEPARATOR: the annotate page's old list let it through
    status = {"status": "rejected", "decided_by": f"cura{hidden}tor", "reason": f"see{OVERRIDE}"}
    html = decision_views.status_html({"status": status, "ingested": {}})
    assert hidden not in html and OVERRIDE not in html
    assert marker(hidden) in html and marker(OVERRIDE) in html


# --- ingest refuses names nobody can read -----------------------------------------------------------------------


def _rename_first(path: Path, field: str, value: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record[field] = value
    lines[0] = json.dumps(record, ensure_ascii=False)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _stored(engine: Engine) -> int:
    with read_session(engine) as session:
        return int(session.execute(select(func.count()).select_from(ScenarioRow)).scalar_one())


def test_ingest_refuses_a_model_name_and_a_scenario_id_holding_a_bidi_control(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    _rename_first(run.responses, "model", f"m-a{OVERRIDE}")
    _rename_first(run.scenarios, "id", "dlg\u200b-1")
    database = f"sqlite:///{tmp_path / 'studio.sqlite'}"
    result = CliRunner().invoke(build_cli(), ["ingest", "--run", str(run.root), "--db", database])
    assert result.exit_code == 1
    assert f"{run.responses}:1: model: holds an invisible or direction-changing character (U+202E" in result.output
    assert f"{run.scenarios}:1: id: holds an invisible or direction-changing character (U+200B" in result.output
    assert "m-a⟨U+202E⟩" in result.output and OVERRIDE not in result.output
    from studio.db import create_db_engine

    engine = create_db_engine(database)
    try:
        assert _stored(engine) == 0
    finally:
        engine.dispose()


def test_ingest_curation_refuses_a_judge_name_holding_a_bidi_control(tmp_path: Path) -> None:
    from studio.services.curation_ingest import read_refine_dir
    from studio.services.ingest import IngestError
    from tests.studio.curation_run import write_refine_dir

    folder = write_refine_dir(tmp_path / "refine")
    prescreen = folder.prescreen
    _rename_first(prescreen, "judge_model", f"judge{OVERRIDE}")
    with pytest.raises(IngestError) as caught:
        read_refine_dir(folder.root)
    assert [(problem.path, problem.line, problem.field) for problem in caught.value.problems] == [
        (str(prescreen), 1, "judge_model")
    ]


def test_a_scenario_id_holding_an_invisible_character_is_never_stored(engine: Engine) -> None:
    from studio.services.ingest import ingest_scenarios
    from tests.studio.helpers import make_scenarios

    scenario = make_scenarios()[0].model_copy(update={"id": f"dlg{OVERRIDE}-1"})
    with pytest.raises(InvalidInput, match=r"^id: holds an invisible .*U\+202E"), write_session(engine) as session:
        ingest_scenarios(session, [scenario], actor="test")
    assert _stored(engine) == 0


# --- usernames that pass for another ----------------------------------------------------------------------------


def test_the_skeleton_is_unicodes_for_known_look_alikes() -> None:
    assert skeleton("\u0430nnotator01") == skeleton("annotator01")  # Cyrillic а
    assert skeleton("p\u0430yp\u0430l") == skeleton("paypal")
    assert skeleton("rn") == skeleton("m")
    assert skeleton("annotator0l") == skeleton("annotator01")  # l and 1
    assert skeleton("adm\u0131n") == skeleton("admin")  # dotless ı
    assert skeleton("annotator02") != skeleton("annotator01")
    assert skeleton("李雷") != skeleton("李蕾")


@pytest.mark.parametrize(
    ("name", "refused", "says"),
    [
        ("ann\u0430tator01", InvalidInput, "mixes letters of Latin and Cyrillic"),  # the example
        ("\u0440\u0430\u0440\u0430", Conflict, "looks like the existing user “papa”"),  # all Cyrillic: рара
        ("annotator0l", Conflict, "looks like the existing user “annotator01”"),
        ("x\u0663", InvalidInput, "mixes"),  # Arabic-Indic digit in a Latin name
    ],
)
def test_a_name_that_passes_for_another_is_refused_naming_it(name: str, refused: type, says: str) -> None:
    with pytest.raises(refused) as caught:
        check_new_username(name, ["annotator01", "papa", "admin"])
    assert str(caught.value).startswith(f"username: “{name}”") and says in str(caught.value)


@pytest.mark.parametrize("name", ["annotator02", "Annotator01", "李雷", "山田たろう", "José María", "Алексей", "rita"])
def test_distinct_names_are_still_accepted(name: str) -> None:
    check_new_username(name, ["annotator01", "papa", "admin"])


# --- a look-alike username at both front doors (needs studio.services.auth.create_user to call check_new_username) --


def test_a_look_alike_username_is_refused_by_the_cli_and_rest_and_distinct_names_still_work(
    corpus: Engine, users: dict[str, UserPublic], db_url: str, tmp_path: Path
) -> None:
    import httpx
    from fastapi import FastAPI

    from studio.models import User
    from studio.settings import get_settings
    from studio.web.api import create_api
    from tests.serving import serve_in_thread
    from tests.studio.conftest import PASSWORD

    def h2h(*args: str) -> Any:
        return CliRunner().invoke(build_cli(), [*args, "--db", db_url], catch_exceptions=False)

    assert h2h("users", "add", "annotator01", "--role", "annotator", "--password", "x").exit_code == 0
    mixed = h2h("users", "add", "ann\u0430tator01", "--role", "annotator", "--password", "x")
    assert mixed.exit_code == 1 and "username: “annаtator01” mixes letters of Latin and Cyrillic" in mixed.output
    twin = h2h("users", "add", "annotator0l", "--role", "annotator", "--password", "x")
    assert twin.exit_code == 1 and "looks like the existing user “annotator01”" in twin.output
    assert h2h("users", "add", "annotator02", "--role", "annotator", "--password", "x").exit_code == 0

    app = FastAPI()
    app.mount("/api", create_api(get_settings(database_url=db_url), engine=corpus))
    with serve_in_thread(app) as url, httpx.Client(base_url=f"{url}/api/v1", timeout=60) as client:
        token = client.post("/login", json={"username": "admin", "password": PASSWORD}).json()["token"]
        client.headers["Authorization"] = f"Bearer {token}"
        for name in ("\u0430nnotator01", "\u0430dmin"):  # a Cyrillic а among Latin letters: mixed scripts
            refused = client.post("/admin/users", json={"username": name, "role": "annotator", "password": "x"})
            assert refused.status_code == 422, refused.text
        look_alike = client.post("/admin/users", json={"username": "adm\u0131n", "role": "annotator", "password": "x"})
        assert look_alike.status_code == 409 and "looks like the existing user “admin”" in look_alike.text
        assert (
            client.post("/admin/users", json={"username": "李雷", "role": "annotator", "password": "x"}).status_code
            == 201
        )
    with read_session(corpus) as session:
        names = set(session.execute(select(User.username)).scalars())
    assert {"annotator01", "annotator02", "李雷"} <= names
    assert not names & {"ann\u0430tator01", "annotator0l", "\u0430nnotator01", "\u0430dmin", "adm\u0131n"}


def test_the_import_check_refuses_a_scenario_id_holding_a_bidi_control(
    admin_api: str,  # noqa: F811  (the fixture imported above)
    corpus: Engine,
) -> None:
    from tests.studio.web.test_admin_api import GOOD_LINES, client_for, post_files

    lines = [GOOD_LINES[0], {**GOOD_LINES[1], "id": f"imp{OVERRIDE}-2"}]
    text = "\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n"
    with client_for(admin_api, "admin") as client:
        refused = post_files(client, {"ids.jsonl": text}, confirm=False)
    assert refused.status_code == 422, refused.text
    [problem] = refused.json()["problems"]
    assert problem.startswith("ids.jsonl:2: id: holds an invisible or direction-changing character (U+202E")
    assert "imp⟨U+202E⟩-2" in problem
    assert _stored(corpus) == 6  # the corpus's own, nothing imported


# --- what a live page receives ----------------------------------------------------------------------------------


def _page_event(client: Any, elem_id: str) -> dict[str, Any]:
    """Press ``elem_id`` the way the page does (queue/join with each input's value as the page starts, then the
    event stream); the completed event's message."""
    import uuid

    config = client.get("/ui/config").json()
    components = {entry["id"]: entry.get("props", {}) for entry in config["components"]}
    [trigger] = [key for key, props in components.items() if props.get("elem_id") == elem_id]
    [dependency] = [
        entry for entry in config["dependencies"] if [trigger, "click"] in entry["targets"] and entry.get("backend_fn")
    ]
    session_hash = uuid.uuid4().hex
    body = {"data": [components[key].get("value") for key in dependency["inputs"]], "fn_index": dependency["id"]}
    body |= {"session_hash": session_hash, "trigger_id": trigger, "event_data": None}
    assert client.post("/ui/gradio_api/queue/join", json=body).status_code == 200
    with client.stream("GET", "/ui/gradio_api/queue/data", params={"session_hash": session_hash}) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:") and "process_completed" in line:
                return dict(json.loads(line[len("data:") :]))
    raise AssertionError("the event stream ended without a result")


def test_a_live_curate_page_receives_the_markers_in_its_list_and_audit_log(tmp_path: Path) -> None:
    import httpx

    from studio.db import create_db_engine
    from studio.services.auth import create_user
    from studio.settings import get_settings
    from studio.web.app import create_app
    from tests.browser.store_fixture import PASSWORD, build_store
    from tests.serving import serve_in_thread

    store = build_store(tmp_path)
    engine = create_db_engine(store.database_url)
    with write_session(engine) as session:
        create_user(session, username="cora", password=PASSWORD, role="curator")
        first = session.execute(select(ScenarioRow.id).order_by(ScenarioRow.id)).scalars().first()
        session.execute(update(ScenarioRow).where(ScenarioRow.id == first).values(user_input=f"abc{OVERRIDE}exe"))
        reason = {"reason": f"see\u2062{OVERRIDE}"}
        session.add(
            AuditLog(actor="x", action="scenario.decide", entity="scenario", entity_id=str(first), detail=reason)
        )
    engine.dispose()
    app = create_app(get_settings(database_url=store.database_url))
    with serve_in_thread(app) as base, httpx.Client(base_url=base, timeout=60) as client:
        assert client.post("/login", data={"username": "cora", "password": PASSWORD}).status_code == 303
        listed = _page_event(client, "h2h-search")
        audit = _page_event(client, "h2h-audit-refresh")
    for done in (listed, audit):
        assert done["success"] is True, done
        table_value = json.dumps(done["output"]["data"][0], ensure_ascii=False)
        assert OVERRIDE not in table_value and marker(OVERRIDE) in table_value
    assert "abc⟨U+202E⟩exe" in json.dumps(listed["output"]["data"][0], ensure_ascii=False)
    assert "see⟨U+2062⟩⟨U+202E⟩" in json.dumps(audit["output"]["data"][0], ensure_ascii=False)


def test_dropdown_choices_are_labelled_as_shown_and_valued_as_stored() -> None:
    assert tables.labelled(["demo-warm-companion", f"m-a{OVERRIDE}"]) == [
        ("demo-warm-companion", "demo-warm-companion"),
        ("m-a⟨U+202E⟩", f"m-a{OVERRIDE}"),
    ]


def test_the_campaign_forms_model_choices_are_labelled_as_shown(corpus: Engine, users: dict[str, UserPublic]) -> None:
    """A model name stored before the rule is offered in the admin's new-campaign form written out, valued as stored."""
    from studio.ui.admin_campaigns import CampaignsPanel

    _legacy_texts(corpus)
    with read_session(corpus) as session:
        loaded = CampaignsPanel(open_context=None).load_values(session, users["admin"])  # type: ignore[arg-type]
    model_choices = [
        dropdown
        for dropdown in loaded
        if any(value == f"m-a{OVERRIDE}" for _label, value in getattr(dropdown, "choices", None) or [])
    ]
    assert len(model_choices) == 1
    assert ("m-a⟨U+202E⟩", f"m-a{OVERRIDE}") in model_choices[0].choices
    assert all(OVERRIDE not in label for label, _value in model_choices[0].choices)
