"""The REST API's request and response bodies (pydantic), and the two ways a route answers without re-validation.

The answer a client submits and the revision it sends are :class:`studio.services.answer_values.Submission` and
``Revision`` themselves: the models the annotate page builds and the use cases pass whole to the services are the
API's bodies, so the API and the page accept exactly the same submits and revisions.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import Response, status
from pydantic import BaseModel, Field

from studio.models import AnswerPublic
from studio.usecases.annotate import Revision, Submission

__all__ = [
    "AnswerIn",
    "AnswerOut",
    "DecisionIn",
    "LoginIn",
    "MessageIn",
    "MessageOut",
    "PublishIn",
    "ReviseIn",
    "SkipIn",
    "TokenOut",
    "json_model",
    "no_content",
]

#: A submit's body (``item_id``, ``lease_id``, ``submission_id``, ``answers``, ``seconds_spent``).
AnswerIn = Submission


class LoginIn(BaseModel):
    username: str = Field(min_length=1, max_length=64)
    password: str = Field(min_length=1, max_length=1024)


class TokenOut(BaseModel):
    token: str


class SkipIn(BaseModel):
    item_id: int
    lease_id: str = Field(min_length=1, max_length=64)


#: A revision's body (``answers``, ``seconds_spent``).
ReviseIn = Revision


class AnswerOut(BaseModel):
    """The caller's stored answer, with pairwise choices shown as the A/B they picked."""

    answer_id: int
    item_id: int
    submission_id: str
    values: dict[str, Any]
    seconds_spent: float | None
    revision: int

    @classmethod
    def of(cls, answer: AnswerPublic, values: dict[str, Any]) -> AnswerOut:
        """``answer`` with ``values`` as the caller gave them (see ``annotate.values_as_shown``)."""
        return cls(
            answer_id=answer.id,
            item_id=answer.item_id,
            submission_id=answer.submission_id,
            values=values,
            seconds_spent=answer.seconds_spent,
            revision=answer.revision,
        )


class MessageIn(BaseModel):
    """A rater's message in a live session. The campaign's ``max_message_chars`` is checked by the service (422
    naming ``text``); this bound is only the largest any campaign may set."""

    text: str = Field(max_length=100_000)


class MessageOut(BaseModel):
    """The companion's stored reply to a message and its turn number (1 for the first exchange)."""

    reply: str
    turn: int


class DecisionIn(BaseModel):
    action: Literal["accept", "edit", "reject"]
    reason: str = Field(max_length=4000)
    edits: dict[str, Any] | None = None
    #: The scenario's ``revision`` as the client last read it (``GET /v1/curation/scenarios/{id}``): a decision on a
    #: scenario that changed since is refused (409) instead of landing on a state nobody saw.
    revision: str | None = Field(default=None, max_length=64)


class PublishIn(BaseModel):
    name: str = Field(min_length=1, max_length=128)
    note: str | None = Field(default=None, max_length=4000)
    include_edits: bool = True
    #: The ``content_hash`` of ``GET /publish-preview``: publish exactly what the preview showed (409 if it changed).
    expected_hash: str | None = Field(default=None, max_length=64)


def json_model(model: BaseModel, status_code: int = status.HTTP_200_OK) -> Response:
    """``model`` as the JSON body, serialised once by pydantic.

    A route that returns a model it built itself has it validated by construction; returning it
    through FastAPI's ``response_model`` would validate it a second time (for a sync route, in one more
    worker-thread hop) before serialising the same bytes. The decorator keeps ``response_model`` for
    the OpenAPI schema.
    """
    return Response(model.model_dump_json(), status_code=status_code, media_type="application/json")


def no_content() -> Response:
    return Response(status_code=status.HTTP_204_NO_CONTENT)
