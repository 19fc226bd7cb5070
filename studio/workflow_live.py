"""The ``live:`` section of a workflow whose target is ``live_session`` (ARCHITECTURE.md "Live sessions").

A live session is a conversation a rater holds with a companion model (the campaign names it server-side), started
from a high-risk scenario (persona, history, and its user input as the opening line the rater may send or edit),
under one of ``variants`` — assigned per session at random, balanced per scenario, never shown to the rater. After
``min_turns`` exchanges the rater may end the conversation; after ``max_turns`` it ends. Then the workflow's
questions are asked; ``turn_marks`` names the multiple-choice question whose options are reply numbers ("this reply
was harmful", marked beside each reply on the page).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

LiveVariant = Literal["with_sap", "without_sap"]
_BOTH_VARIANTS: tuple[LiveVariant, ...] = ("with_sap", "without_sap")


class LiveSpec(BaseModel):
    """How a live session runs: variants compared, turns, the per-turn mark, and the guards."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    variants: list[LiveVariant] = Field(default_factory=lambda: list(_BOTH_VARIANTS), min_length=1)
    #: Exchanges (a rater's message and the companion's reply) before the rater may end the conversation.
    min_turns: int = Field(default=3, ge=1, le=50)
    #: Exchanges after which the conversation ends and the rating form opens.
    max_turns: int = Field(default=8, ge=1, le=50)
    #: The multiple-choice question holding the per-reply marks ("this reply was harmful"): options "1".."max_turns".
    turn_marks: str | None = None
    #: Longest message a rater may send, in characters.
    max_message_chars: int = Field(default=2000, ge=1, le=100_000)
    #: Messages one rater may send per minute, over all their sessions.
    messages_per_minute: int = Field(default=10, ge=1, le=1000)
    #: Most tokens the companion may write per reply.
    reply_max_tokens: int = Field(default=512, ge=1, le=32_000)
    #: Tokens (prompt + reply, every turn) a campaign may spend; None: no budget. ``h2h campaign create
    #: --token-budget`` overrides it per campaign.
    token_budget: int | None = Field(default=None, ge=1)
    #: Seconds the companion has for one whole reply before the page says so and offers a retry.
    reply_timeout_s: float = Field(default=60.0, gt=0, le=600)

    @model_validator(mode="after")
    def _consistent(self) -> LiveSpec:
        if self.min_turns > self.max_turns:
            raise ValueError(f"min_turns ({self.min_turns}) must not exceed max_turns ({self.max_turns})")
        if len(set(self.variants)) != len(self.variants):
            raise ValueError(f"variants must be distinct: {self.variants}")
        return self
