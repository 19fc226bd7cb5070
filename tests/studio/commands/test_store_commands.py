"""The store's commands through the real ``h2h`` CLI: db upgrade, ingest, users, campaign."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from pipeline.rundir import RunDir
from studio.cli import build_cli
from studio.db import create_db_engine, read_session
from studio.models import Item
from tests.studio.conftest import write_run


def h2h(*args: str) -> Result:
    return CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)


def test_ingest_users_and_campaign_commands(db_url: str, run_dir: RunDir, tmp_path: Path) -> None:
    assert h2h("db", "upgrade", "--db", db_url).exit_code == 0
    first = h2h("ingest", "--run", str(run_dir.root), "--db", db_url)
    assert first.exit_code == 0 and "scenarios_added: 6" in first.output
    second = h2h("ingest", "--run", str(run_dir.root), "--db", db_url)
    assert "scenarios_added: 0" in second.output and "responses_added: 0" in second.output
    assert h2h("users", "add", "ann", "--role", "annotator", "--password", "pw", "--db", db_url).exit_code == 0
    assert h2h("users", "set-role", "ann", "expert", "--db", db_url).exit_code == 0
    listed = h2h("users", "list", "--db", db_url).output
    assert listed.split("\t") == ["ann", "expert", "active", "last sign-in never\n"]
    duplicate = h2h("users", "add", "ann", "--role", "annotator", "--password", "pw", "--db", db_url)
    assert duplicate.exit_code == 1 and "already exists" in duplicate.output

    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        json.dumps(
            {
                "scenario_id": "dlg-2",
                "model": "model-alpha",
                "variant": "with_sap",
                "answers": {"safety": 5, "violation": "no"},
            }
        )
        + "\n",
        encoding="utf-8",
    )
    created = h2h(
        "campaign",
        "create",
        "safety",
        "--schema",
        "sap_safety",
        "--people-per-item",
        "3",
        "--gold",
        str(gold),
        "--db",
        db_url,
    )
    assert created.exit_code == 0, created.output
    assert h2h("campaign", "create", "adj", "--schema", "adjudication", "--db", db_url).exit_code == 0
    assert (
        h2h(
            "campaign", "create", "if", "--schema", "instruction_following", "--model", "model-beta", "--db", db_url
        ).exit_code
        == 0
    )
    assert h2h("campaign", "close", "adj", "--db", db_url).exit_code == 0
    listing = h2h("campaign", "list", "--db", db_url).output.splitlines()
    assert [line.split("\t")[:3] for line in listing] == [
        ["adj", "adjudication", "closed"],
        ["if", "instruction_following", "open"],
        ["safety", "sap_safety", "open"],
    ]
    engine = create_db_engine(db_url)
    with read_session(engine) as session:
        items = session.query(Item).order_by(Item.campaign_id, Item.position).all()
    engine.dispose()
    by_campaign: dict[int, list[Item]] = {}
    for item in items:
        by_campaign.setdefault(item.campaign_id, []).append(item)
    safety, adjudication, following = (by_campaign[key] for key in sorted(by_campaign))
    assert {item.scenario_id for item in safety} == {"dlg-2"} and len(safety) == 4  # 2 models x 2 variants
    assert [item.is_gold for item in safety].count(True) == 1
    assert {item.scenario_id for item in adjudication} <= {"iti-1", "iti-2", "iti-3"}
    assert {item.scenario_id for item in following} == {"dlg-3"} and len(following) == 2


def test_bad_inputs_are_reported_without_a_traceback(db_url: str, tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    run.scores.write_text(run.scores.read_text(encoding="utf-8") + '{"scenario_id": 1}\n', encoding="utf-8")
    broken = h2h("ingest", "--run", str(run.root), "--db", db_url)
    assert broken.exit_code == 1 and "scores.jsonl:25" in broken.output
    unknown = h2h("campaign", "create", "x", "--schema", "no_such_schema", "--db", db_url)
    assert unknown.exit_code == 2 and "crowd_vote" in unknown.output
    gold = tmp_path / "gold.jsonl"
    gold.write_text("{not json\n", encoding="utf-8")
    bad_gold = h2h("campaign", "create", "x", "--schema", "crowd_vote", "--gold", str(gold), "--db", db_url)
    assert bad_gold.exit_code == 1 and "gold.jsonl:1" in bad_gold.output


def test_the_cli_role_choices_are_the_policies_roles_and_need_no_orm() -> None:
    """``h2h users --role`` offers studio.policies.ROLES, imported without the ORM (``h2h --help`` stays fast)."""
    import subprocess
    import sys

    from tests.repo import REPO_ROOT

    probe = (
        "import sys; from studio.commands.users import ROLES; from studio.policies import ROLES as P; "
        "print(ROLES == P, 'sqlalchemy' in sys.modules)"
    )
    shown = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert shown.stdout.split() == ["True", "False"], shown.stderr
