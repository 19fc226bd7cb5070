"""``h2h demo``: a working studio on a fresh machine, from the bundled demo data.

Steps (each one reuses what an earlier run left, so running the demo twice changes nothing):

1. a folder (``./h2h-demo`` by default) with a SQLite store ``studio.sqlite`` and a run directory ``run/``;
2. the bundled demo scenarios (``pipeline/resources/demo``) and responses copied into the run directory;
3. ``score_run`` with the offline ``minilm`` embedder, then results with no judge (every itinerary
   level I–III response is flagged for adjudication);
4. the store migrated to head and the run ingested;
5. demo accounts (annotators, experts, a curator, a researcher, an admin) with documented passwords;
6. one open campaign per bundled workflow (``annotation_schemas/``); the live one (``demo-live_safety``) talks to
   the stand-in companion (``pipeline.live.standin``) at ``http://127.0.0.1:8765/v1``, which ``h2h demo`` serves
   beside the studio (:func:`start_demo_companion`: on a free port, recorded in the campaign, when 8765 is taken).
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.jsonl import atomic_target
from pipeline.paths import demo_dir
from studio.policies import MANAGERS, ROLES

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlmodel import Session

    from pipeline.live.standin import StandinCompanion
    from studio.models import Campaign

logger = logging.getLogger(__name__)

DEFAULT_DEMO_DIR = Path("h2h-demo")
DEMO_EMBEDDER = "minilm"
DEMO_TOKENIZER = "zh"
CAMPAIGN_PREFIX = "demo-"
#: People per item where the demo asks fewer than the workflow: the paper's 20 crowd votes per scenario would leave a
#: handful of people trying the demo with no decided item; 5, filled item by item, gives agreement figures early.
DEMO_PEOPLE_PER_ITEM: dict[str, int] = {"crowd_vote": 5}
#: Where the demo's live campaigns find the stand-in companion: 127.0.0.1, this port unless it was taken.
DEMO_COMPANION_HOST = "127.0.0.1"
DEMO_COMPANION_PORT = 8765
DEMO_COMPANION_MODEL = "standin-companion"


@dataclass(frozen=True)
class DemoAccount:
    username: str
    password: str
    role: str
    #: Why the demo password may not sign this account in any more (changed since, deactivated); empty when it does.
    note: str = ""


@dataclass
class DemoSummary:
    """What :func:`prepare_demo` made or found: the store's URL, the accounts and the campaigns."""

    database_url: str
    run_dir: Path
    accounts: list[DemoAccount] = field(default_factory=list)
    campaigns: list[str] = field(default_factory=list)
    skipped_campaigns: dict[str, str] = field(default_factory=dict)
    scored: int = 0
    flagged: int = 0
    #: Where the demo's live campaigns expect the stand-in companion (None: no live campaign).
    companion_url: str | None = None


def demo_password(username: str) -> str:
    """The documented demo password of an account: its username followed by ``-demo``."""
    return f"{username}-demo"


def demo_accounts(*, annotators: int = 50, experts: int = 3) -> list[DemoAccount]:
    """annotator01..annotatorNN, expert01..expertNN, curator, researcher and admin, with demo passwords."""
    names = [(f"annotator{number:02d}", "annotator") for number in range(1, annotators + 1)]
    names += [(f"expert{number:02d}", "expert") for number in range(1, experts + 1)]
    names += [(role, role) for role in ROLES if role in MANAGERS]  # one account per staff role, named after it
    return [DemoAccount(username, demo_password(username), role) for username, role in names]


def default_database_url(directory: Path) -> str:
    """The demo's SQLite store inside ``directory``."""
    return f"sqlite:///{(directory / 'studio.sqlite').resolve()}"


def copy_demo_inputs(run_dir: Path, source: Path | None = None) -> None:
    """Copy the bundled scenarios and responses into the run directory, once (existing files are kept)."""
    source = source or demo_dir()
    run_dir.mkdir(parents=True, exist_ok=True)
    for name in ("scenarios.jsonl", "responses.jsonl"):
        target = run_dir / name
        if not target.exists():
            origin = source / name
            if not origin.exists():
                raise FileNotFoundError(f"{origin}: the bundled demo data is missing")
            with atomic_target(target) as temporary:
                shutil.copyfile(origin, temporary)


def run_demo_pipeline(run_dir: Path, *, workers: int = 1) -> tuple[int, int]:
    """Score the run (resuming) with the offline embedder and write results with no judge.

    Returns ``(results written, responses flagged for adjudication)``.
    """
    from pipeline.results import write_results
    from pipeline.rundir import RunDir
    from pipeline.scoring.run import score_run

    run = RunDir(run_dir)
    score_run(run, embedder=DEMO_EMBEDDER, tokenizer=DEMO_TOKENIZER, workers=workers)
    return write_results(run, use_judgments=False)


def ensure_accounts(engine: object, accounts: list[DemoAccount]) -> list[DemoAccount]:
    """Create the accounts that do not exist yet; return the accounts, each with a ``note`` where its demo password
    no longer signs it in (reset since, or the account deactivated), so a re-run does not print credentials that
    stopped working."""
    from sqlmodel import col, select

    from studio.db import write_session
    from studio.models import AuditLog
    from studio.services.auth import create_user, list_users

    with write_session(engine) as session:  # type: ignore[arg-type]
        existing = {user.username: user for user in list_users(session)}
        missing = [account for account in accounts if account.username not in existing]
        for account in missing:
            create_user(session, username=account.username, password=account.password, role=account.role, actor="demo")
        reset = set(session.exec(select(AuditLog.entity_id).where(col(AuditLog.action) == "user.reset_password")).all())
    noted = []
    for account in accounts:
        known = existing.get(account.username)
        if known is not None and not known.is_active:
            account = replace(account, note="deactivated")
        elif account.username in reset:
            account = replace(account, note="password changed since the demo set it")
        noted.append(account)
    return noted


def companion_url(port: int = DEMO_COMPANION_PORT) -> str:
    """The stand-in companion's API root on ``port`` of 127.0.0.1."""
    return f"http://{DEMO_COMPANION_HOST}:{port}/v1"


def ensure_campaigns(engine: object, schemas_dir: Path | None = None) -> tuple[list[str], dict[str, str]]:
    """Open one campaign per workflow (``demo-<workflow>``) unless it exists, sized for a handful of people
    (:data:`DEMO_PEOPLE_PER_ITEM`) and filling items to their quota first (the default queue order). A
    ``live_session`` workflow's campaign talks to the stand-in companion on :data:`DEMO_COMPANION_PORT`; it is not
    asked first (:func:`start_demo_companion` starts it when the demo serves).

    Returns the campaign names present, and the workflows skipped with the reason (no matching targets).
    """
    from sqlmodel import select

    from studio.db import write_session
    from studio.errors import InvalidInput
    from studio.models import Campaign
    from studio.services.campaigns import create_campaign
    from studio.services.live_endpoint import LiveEndpointConfig
    from studio.workflows import load_schemas

    present: list[str] = []
    skipped: dict[str, str] = {}
    for name, schema in load_schemas(schemas_dir).items():
        campaign_name = CAMPAIGN_PREFIX + name
        try:
            with write_session(engine) as session:  # type: ignore[arg-type]
                if session.exec(select(Campaign).where(Campaign.name == campaign_name)).first() is None:
                    people = DEMO_PEOPLE_PER_ITEM.get(name)
                    live = None
                    if schema.target == "live_session":
                        live = LiveEndpointConfig(model=DEMO_COMPANION_MODEL, base_url=companion_url())
                    create_campaign(
                        session,
                        name=campaign_name,
                        schema=schema,
                        people_per_item=people,
                        actor="demo",
                        live_endpoint=live,
                    )
            present.append(campaign_name)
        except InvalidInput as error:
            logger.warning("demo: no campaign for workflow %s: %s", name, error.detail)
            skipped[name] = error.detail
    return present, skipped


def prepare_demo(
    directory: Path | str = DEFAULT_DEMO_DIR,
    *,
    database_url: str | None = None,
    annotators: int = 50,
    experts: int = 3,
    workers: int = 1,
    source: Path | None = None,
    schemas_dir: Path | None = None,
) -> DemoSummary:
    """Build (or bring up to date) the demo: run directory, scored results, store, accounts, campaigns.

    Idempotent: a second call resumes the pipeline, re-ingests without duplicates, and creates no
    second account or campaign. ``source`` overrides the bundled demo folder (tests use it).
    """
    from studio.db import create_db_engine, upgrade_db
    from studio.services.ingest import ingest_run

    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    url = database_url or default_database_url(folder)
    run_dir = folder / "run"
    copy_demo_inputs(run_dir, source)
    scored, flagged = run_demo_pipeline(run_dir, workers=workers)
    engine = create_db_engine(url)
    try:
        upgrade_db(engine)
        ingest_run(engine, run_dir)
        accounts = ensure_accounts(engine, demo_accounts(annotators=annotators, experts=experts))
        campaigns, skipped = ensure_campaigns(engine, schemas_dir)
        companion = recorded_companion_url(engine)
    finally:
        engine.dispose()
    return DemoSummary(url, run_dir, accounts, campaigns, skipped, scored, flagged, companion)


def _standin_campaigns(session: Session) -> list[Campaign]:
    """The demo's live campaigns that talk to a stand-in companion on 127.0.0.1 (a campaign pointed elsewhere since
    is left alone)."""
    from urllib.parse import urlsplit

    from sqlmodel import col, select

    from studio.models import Campaign

    rows = session.exec(select(Campaign).where(col(Campaign.name).startswith(CAMPAIGN_PREFIX))).all()
    return [
        row
        for row in rows
        if row.live_endpoint
        and row.live_endpoint.get("model") == DEMO_COMPANION_MODEL
        and urlsplit(str(row.live_endpoint.get("base_url"))).hostname == DEMO_COMPANION_HOST
    ]


def recorded_companion_url(engine: Engine) -> str | None:
    """The base URL the demo's live campaigns record for the stand-in; None when there is no such campaign."""
    from studio.db import read_session

    with read_session(engine) as session:
        for row in _standin_campaigns(session):
            return str((row.live_endpoint or {})["base_url"])
    return None


def url_port(base_url: str) -> int:
    """The port of ``base_url`` (80 or 443 when it names none)."""
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    return parts.port or (443 if parts.scheme == "https" else 80)


def point_demo_campaigns(engine: Engine, base_url: str) -> list[str]:
    """Point the demo's stand-in live campaigns at ``base_url`` (audit-logged); returns the campaigns changed."""
    from studio.db import write_session
    from studio.models import AuditLog

    changed = []
    with write_session(engine) as session:
        for row in _standin_campaigns(session):
            endpoint = row.live_endpoint or {}
            if endpoint["base_url"] != base_url:
                # a new dict: the JSON column notices reassignment, not changes inside the old one
                row.live_endpoint = {**endpoint, "base_url": base_url}
                session.add(row)
                detail = {"base_url": base_url}
                session.add(
                    AuditLog(
                        actor="demo", action="campaign.companion", entity="campaign", entity_id=row.name, detail=detail
                    )
                )
                changed.append(row.name)
    return changed


def start_demo_companion(database_url: str, *, token_delay_s: float = 0.02) -> StandinCompanion:
    """Serve the stand-in companion for the demo's live campaigns and point them at it; the caller stops it.

    It listens on the port the campaigns record (8765 the first time). When that port is taken (another program, a
    second demo), it listens on a free port and the campaigns' base URL is changed to it, so a newcomer can talk at
    once; a later run tries the recorded port first, so a run that finds it free changes nothing.
    """
    from pipeline.live.standin import StandinCompanion
    from studio.db import create_db_engine

    engine = create_db_engine(database_url)
    try:
        recorded = recorded_companion_url(engine)
        port = url_port(recorded) if recorded else DEMO_COMPANION_PORT
        companion = StandinCompanion(host=DEMO_COMPANION_HOST, port=port, token_delay_s=token_delay_s,
                                     model=DEMO_COMPANION_MODEL)  # fmt: skip
        try:
            companion.start()
        except OSError as error:
            logger.warning("demo: port %s is taken (%s); the stand-in companion listens on a free port", port, error)
            companion.port = 0
            companion.start()
        point_demo_campaigns(engine, companion.base_url)
    finally:
        engine.dispose()
    return companion
