"""Studio fixtures: the store on a SQLite file and on a fresh PostgreSQL database, people, a corpus, a campaign,
the crowd's vote on it and a fully studied store (plain helpers they use live in ``helpers.py``).

``db_url`` runs each test twice: on a new SQLite file and on a PostgreSQL database created for this
test session (``h2h_test_<random>``, dropped at the end; tables emptied before each test).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, inspect, text

from pipeline.rundir import RunDir
from studio.db import create_db_engine, upgrade_db, write_session
from studio.models import ROLES, CampaignPublic, UserPublic
from studio.services.auth import hash_password
from studio.services.campaigns import create_campaign
from studio.workflows import load_schemas
from tests.requirements import fresh_postgres_database

# Re-exported: other test modules still import these names from here.
from tests.studio.helpers import MODELS, PASSWORD, add_people, crowd_vote, make_scenarios, study, write_run

__all__ = ["MODELS", "PASSWORD", "add_people", "make_scenarios", "write_run"]


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session, migrated to head; dropped afterwards."""
    with fresh_postgres_database("h2h_test_") as url:
        upgrade_db(url)
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated, empty store: a new SQLite file, or the session's PostgreSQL database with its tables emptied."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'studio.sqlite'}"
        upgrade_db(url)
        return url
    url = request.getfixturevalue("postgres_url")
    engine = create_db_engine(url)
    tables = [f'"{name}"' for name in inspect(engine).get_table_names() if name != "alembic_version"]
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE"))
    engine.dispose()
    return url


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    engine = create_db_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def password_hash() -> str:
    """The argon2 hash of :data:`PASSWORD`, computed once: argon2 is slow on purpose (~0.15 s here)."""
    return hash_password(PASSWORD)


@pytest.fixture
def users(engine: Engine, password_hash: str) -> dict[str, UserPublic]:
    """One person per role, named after it (``annotator``, ``expert``, ...), password :data:`PASSWORD`."""
    return {role: add_people(engine, password_hash, [role], role)[0] for role in ROLES}


@pytest.fixture
def run_dir(tmp_path: Path) -> RunDir:
    return write_run(tmp_path / "run")


@pytest.fixture
def corpus(engine: Engine, run_dir: RunDir) -> Engine:
    """The store with :func:`write_run`'s run ingested."""
    from studio.services.ingest import ingest_run

    ingest_run(engine, run_dir)
    return engine


@pytest.fixture
def campaign(corpus: Engine, users: dict[str, UserPublic]) -> CampaignPublic:
    """A crowd_vote campaign over the six scenarios, two people per item."""
    with write_session(corpus) as session:
        return create_campaign(
            session, name="vote", schema=load_schemas()["crowd_vote"], people_per_item=2, actor="admin"
        )


@pytest.fixture
def store(engine: Engine) -> Engine:
    """The migrated, emptied store (curation tables included, from migration 0002) under the name results tests use."""
    return engine


@pytest.fixture
def voted(store: Engine, campaign: CampaignPublic, password_hash: str) -> Engine:
    """The corpus after :func:`~tests.studio.helpers.crowd_vote` on the ``vote`` campaign, not aggregated yet."""
    crowd_vote(store, password_hash)
    return store


@pytest.fixture
def studied(voted: Engine, password_hash: str) -> Engine:
    """Crowd vote, adjudication, SAP safety and instruction following answered and aggregated
    (:func:`~tests.studio.helpers.study`)."""
    study(voted, password_hash)
    return voted
