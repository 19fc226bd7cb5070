"""``h2h campaign create --audit-share/--audit-items/--audit-seed``: an adjudication campaign with a seeded random
audit sample beside the flagged items, recorded in the campaign's schema snapshot; refused elsewhere."""

from __future__ import annotations

from click.testing import CliRunner, Result
from sqlalchemy import Engine, select
from sqlmodel import col

from studio.cli import build_cli
from studio.db import read_session
from studio.models import Campaign, Item


def h2h(*args: str) -> Result:
    return CliRunner().invoke(build_cli(), list(args))


def audited(engine: Engine, name: str) -> tuple[list[int], dict[str, object]]:
    with read_session(engine) as session:
        campaign = session.execute(select(Campaign).where(col(Campaign.name) == name)).scalar_one()
        ids = session.execute(
            select(col(Item.response_id)).where(col(Item.campaign_id) == campaign.id, col(Item.audit).is_(True))
        ).scalars()
        return sorted(int(rid) for rid in ids), dict(campaign.schema_snapshot["audit"])


def test_audit_options_draw_the_same_sample_twice_and_are_recorded(corpus: Engine, db_url: str) -> None:
    for name in ("audit-1", "audit-2"):
        created = h2h("campaign", "create", name, "--schema", "adjudication", "--audit-share", "0.5", "--audit-seed",
                      "4", "--db", db_url)  # fmt: skip
        assert created.exit_code == 0, created.output
    first, spec = audited(corpus, "audit-1")
    assert spec == {"share": 0.5, "items": None, "seed": 4}
    assert len(first) == 4  # half of the 8 judged responses (iti-1, iti-2 × 2 models × 2 variants), rounded up
    assert audited(corpus, "audit-2")[0] == first


def test_audit_options_are_refused_outside_adjudication(corpus: Engine, db_url: str) -> None:
    refused = h2h("campaign", "create", "v", "--schema", "crowd_vote", "--audit-items", "2", "--db", db_url)
    assert refused.exit_code == 2
    assert "adjudication workflow" in refused.output
