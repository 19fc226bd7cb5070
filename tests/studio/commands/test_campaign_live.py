"""``h2h campaign create --schema live_safety --model M --base-url U``: the companion is asked once before anything is
stored (a real OpenAI-compatible server: the stand-in companion on 127.0.0.1), the campaign records it with the NAME
of the key's environment variable and never the key, and the live options are refused on other workflows."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine, func, select

from pipeline.live.standin import StandinCompanion
from studio.cli import build_cli
from studio.db import read_session
from studio.models import Campaign, Item
from tests.studio.live_helpers import ingest_demo_scenarios

MODEL = "standin-companion"
KEY = "sk-test-not-to-be-stored-0123456789"


def h2h(*args: str) -> Result:
    return CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)


def campaigns(engine: Engine) -> list[Campaign]:
    with read_session(engine) as session:
        return list(session.execute(select(Campaign)).scalars())


def item_count(engine: Engine, campaign_id: int | None) -> int:
    with read_session(engine) as session:
        return int(session.execute(select(func.count()).where(Item.campaign_id == campaign_id)).scalar_one())


@pytest.fixture
def scenarios(engine: Engine) -> Engine:
    """The store with the demo scenarios (ten of them high-risk: the live_safety workflow's targets)."""
    ingest_demo_scenarios(engine)
    return engine


@pytest.fixture
def standin() -> Iterator[StandinCompanion]:
    with StandinCompanion(token_delay_s=0) as companion:
        yield companion


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_create_probes_the_companion_and_stores_it_without_the_key(
    scenarios: Engine, db_url: str, standin: StandinCompanion, monkeypatch: pytest.MonkeyPatch
) -> None:
    standin.api_key = KEY  # the stand-in refuses any other Bearer token: the probe must have read the env var
    monkeypatch.setenv("COMPANION_KEY", KEY)
    result = h2h(
        "campaign", "create", "talk", "--schema", "live_safety", "--model", MODEL, "--base-url", standin.base_url,
        "--api-key-env", "COMPANION_KEY", "--token-budget", "50000", "--db", db_url,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"companion: {MODEL} at {standin.base_url} (API key from $COMPANION_KEY)" in result.output
    assert standin.authorizations == [f"Bearer {KEY}"]  # asked once, with the key from the environment
    [campaign] = campaigns(scenarios)
    assert campaign.target_kind == "live_session" and campaign.schema_name == "live_safety"
    assert campaign.live_endpoint == {
        "model": MODEL,
        "base_url": standin.base_url,
        "api_key_env": "COMPANION_KEY",
        "token_budget": 50000,
        "classifier_url": None,
    }
    assert item_count(scenarios, campaign.id) == 10  # one item per high-risk scenario
    assert KEY not in json.dumps(campaign.live_endpoint) and KEY not in result.output
    assert KEY not in json.dumps(campaign.filters) and KEY not in json.dumps(campaign.schema_snapshot)


def test_the_key_variable_defaults_to_h2h_live_api_key(
    scenarios: Engine, db_url: str, standin: StandinCompanion, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("H2H_LIVE_API_KEY", raising=False)
    result = h2h("campaign", "create", "talk", "--schema", "live_safety", "--model", MODEL, "--base-url",
                 standin.base_url + "/", "--db", db_url)  # fmt: skip
    assert result.exit_code == 0, result.output
    [campaign] = campaigns(scenarios)
    endpoint = campaign.live_endpoint or {}
    assert endpoint["api_key_env"] == "H2H_LIVE_API_KEY" and endpoint["base_url"] == standin.base_url
    assert endpoint["token_budget"] is None  # not given: the workflow's live.token_budget applies (none here)
    assert standin.authorizations == [None]  # unset variable: no key sent


def test_a_companion_that_is_down_stores_nothing_and_names_the_base_url(scenarios: Engine, db_url: str) -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    result = h2h("campaign", "create", "talk", "--schema", "live_safety", "--model", MODEL, "--base-url", base_url,
                 "--db", db_url)  # fmt: skip
    assert result.exit_code == 1
    assert base_url in result.output and "unreachable" in result.output
    assert "No campaign was created" in result.output and "h2h standin-companion" in result.output
    assert campaigns(scenarios) == []


def test_a_refused_key_stores_nothing(
    scenarios: Engine, db_url: str, standin: StandinCompanion, monkeypatch: pytest.MonkeyPatch
) -> None:
    standin.api_key = KEY
    monkeypatch.setenv("H2H_LIVE_API_KEY", "a wrong key")
    result = h2h("campaign", "create", "talk", "--schema", "live_safety", "--model", MODEL, "--base-url",
                 standin.base_url, "--db", db_url)  # fmt: skip
    assert result.exit_code == 1 and standin.base_url in result.output and "401" in result.output
    assert "a wrong key" not in result.output and KEY not in result.output
    assert campaigns(scenarios) == []


def test_a_model_the_companion_does_not_serve_names_the_served_one(
    scenarios: Engine, db_url: str, standin: StandinCompanion
) -> None:
    result = h2h("campaign", "create", "talk", "--schema", "live_safety", "--model", "gpt-typo", "--base-url",
                 standin.base_url, "--db", db_url)  # fmt: skip
    assert result.exit_code == 1
    assert "'gpt-typo' is not served" in result.output and f"served: {MODEL}" in result.output
    assert standin.base_url in result.output
    assert campaigns(scenarios) == []


@pytest.mark.parametrize(
    "extra",
    [
        ("--base-url", "http://127.0.0.1:8765/v1"),
        ("--api-key-env", "OTHER_KEY"),
        ("--token-budget", "100"),
        ("--crisis-classifier", "http://127.0.0.1:9/classify"),
    ],
)
def test_live_options_are_refused_on_other_workflows(scenarios: Engine, db_url: str, extra: tuple[str, str]) -> None:
    result = h2h("campaign", "create", "votes", "--schema", "crowd_vote", *extra, "--db", db_url)
    assert result.exit_code == 2
    assert (
        f"{extra[0]}: only a live_session workflow" in result.output
        and "crowd_vote has target scenario" in result.output
    )
    assert campaigns(scenarios) == []


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ((), "exactly one --model and --base-url (got 0 --model, no --base-url)"),
        (("--model", MODEL), "(got 1 --model, no --base-url)"),
        (("--model", MODEL, "--model", "other", "--base-url", "http://x/v1"), "(got 2 --model, a --base-url)"),
        (("--model", MODEL, "--base-url", "ftp://x/v1"), "companion: base_url: Value error, must start with http://"),
        (("--model", MODEL, "--base-url", "http://x/v1", "--api-key-env", "sk-123"), "companion: api_key_env:"),
        (("--model", MODEL, "--base-url", "http://x/v1", "--variant", "with_sap"), "--variant: a live_session"),
    ],
)
def test_a_live_workflow_needs_one_model_and_a_base_url(
    scenarios: Engine, db_url: str, extra: tuple[str, ...], words: str
) -> None:
    result = h2h("campaign", "create", "talk", "--schema", "live_safety", *extra, "--db", db_url)
    assert result.exit_code == 2 and words in result.output, result.output
    assert campaigns(scenarios) == []


def test_the_key_itself_is_no_option(db_url: str) -> None:
    result = h2h("campaign", "create", "talk", "--schema", "live_safety", "--api-key", KEY, "--db", db_url)
    assert result.exit_code == 2 and "No such option '--api-key'" in result.output
