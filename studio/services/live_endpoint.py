"""The companion a ``live_session`` campaign talks to, named server-side when the campaign is created
(``h2h campaign create --model M --base-url U``; ARCHITECTURE.md "Live sessions").

The campaign stores the model, the base URL, the NAME of the environment variable that holds the API key (never the
key: it is read from the server's environment at each call), the token budget and an optional crisis classifier.
Nothing here is ever sent to a rater.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from pydantic import BaseModel, Field, field_validator

from pipeline.live.companion import CompanionEndpoint, CompanionError, probe
from pipeline.live.tripwire import ClassifierEndpoint
from studio.errors import InvalidInput
from studio.workflow_live import LiveSpec

logger = logging.getLogger(__name__)

#: The environment variable read for the companion's API key when a campaign names none.
DEFAULT_API_KEY_ENV = "H2H_LIVE_API_KEY"


class LiveEndpointConfig(BaseModel):
    """What ``Campaign.live_endpoint`` holds."""

    model: str = Field(min_length=1, max_length=256)
    base_url: str = Field(min_length=1, max_length=2048)
    #: The environment variable holding the API key (its name only); unset or empty: no key is sent.
    api_key_env: str = Field(default=DEFAULT_API_KEY_ENV, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
    #: Tokens (prompt + reply, all turns) the campaign may spend; None: no budget.
    token_budget: int | None = Field(default=None, ge=1)
    #: An optional crisis classifier (``pipeline.live.tripwire.classifier_signals``) beside the lexicon.
    classifier_url: str | None = None

    @field_validator("base_url", "classifier_url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/") if value else value


def endpoint_config(stored: dict[str, Any] | None) -> LiveEndpointConfig:
    """The campaign's stored companion; ``InvalidInput`` when the campaign has none (not a live campaign)."""
    if not stored:
        raise InvalidInput("campaign: this campaign has no companion model (it is not a live_session campaign)")
    return LiveEndpointConfig.model_validate(stored)


def companion_endpoint(config: LiveEndpointConfig, *, spec: LiveSpec) -> CompanionEndpoint:
    """The client settings for one call: the key read from the environment now, the workflow's reply limits."""
    key = os.environ.get(config.api_key_env) or None
    return CompanionEndpoint(
        base_url=config.base_url,
        model=config.model,
        api_key=key,
        timeout_s=spec.reply_timeout_s,
        max_tokens=spec.reply_max_tokens,
    )


def classifier_endpoint(config: LiveEndpointConfig) -> ClassifierEndpoint | None:
    return ClassifierEndpoint(url=config.classifier_url) if config.classifier_url else None


def check_companion(config: LiveEndpointConfig, *, spec: LiveSpec) -> None:
    """Probe the companion once (campaign creation): ``InvalidInput`` naming the base URL and what went wrong when it
    is down, refuses the key or does not serve the model."""
    try:
        probe(endpoint=companion_endpoint(config, spec=spec))
    except CompanionError as error:
        raise InvalidInput(f"base_url: the companion model {config.model!r} at {config.base_url} {error}") from None
