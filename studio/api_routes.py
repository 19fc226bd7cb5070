"""The ``/v1`` routes of :func:`studio.api.create_api`: thin wrappers over the services.

Each route resolves the caller from the bearer token first thing in the first session it opens
(``studio.services.auth.signed_in``): no session of its own for authentication. Every route opens one
session but ``submit``, which answers a retry from a read session (off the write lock) and stores a new
answer in a write session. The answering routes are the studio's hot path: the load benchmark drives
them flat out.

No ``from __future__ import annotations`` here: FastAPI must see the ``BearerToken`` dependency type
as an object, not as an unresolvable string.
"""

from typing import Any

from fastapi import FastAPI, Request, Response, status
from fastapi.responses import JSONResponse
from sqlalchemy import Engine

from studio.api import (
    AnswerIn,
    AnswerOut,
    BearerToken,
    LoginIn,
    ReviseIn,
    SkipIn,
    TokenOut,
    json_model,
    no_content,
)
from studio.db import read_session, write_session
from studio.models import UserPublic
from studio.security import LoginThrottle, LoginThrottled, client_address
from studio.services import answers as answer_service
from studio.services import auth, queue
from studio.services.campaigns import CampaignSummary, campaign_summaries
from studio.services.errors import NotAuthenticated
from studio.settings import Settings


def add_routes(api: FastAPI, engine: Engine, settings: Settings, throttle: LoginThrottle) -> None:
    """Register every endpoint on ``api``."""
    _add_auth_routes(api, engine, settings, throttle)
    _add_queue_routes(api, engine, settings)
    _add_answer_routes(api, engine, settings)


def _add_auth_routes(api: FastAPI, engine: Engine, settings: Settings, throttle: LoginThrottle) -> None:
    @api.post(
        "/v1/login",
        response_model=TokenOut,
        tags=["auth"],
        responses={429: {"description": "too many failed sign-ins; see Retry-After"}},
    )
    def login(body: LoginIn, request: Request) -> Any:
        def sign_in() -> str:
            with write_session(engine) as session:
                return auth.login(
                    session, username=body.username, password=body.password, ttl_seconds=settings.token_ttl_seconds
                )

        try:
            token = throttle.attempt(
                username=body.username, address=client_address(request), sign_in=sign_in, failures=(NotAuthenticated,)
            )
        except LoginThrottled as error:
            return JSONResponse(
                {"detail": f"login: {error}"},
                status_code=status.HTTP_429_TOO_MANY_REQUESTS,
                headers={"Retry-After": str(error.retry_after)},
            )
        return TokenOut(token=token)

    @api.post("/v1/logout", status_code=status.HTTP_204_NO_CONTENT, tags=["auth"])
    def logout(token: BearerToken) -> Response:
        with write_session(engine) as session:
            auth.signed_in(session, token=token)
            auth.logout(session, token=token)
        return no_content()

    @api.get("/v1/me", response_model=UserPublic, tags=["auth"])
    def me(token: BearerToken) -> UserPublic:
        with read_session(engine) as session:
            return auth.signed_in(session, token=token)


def _add_queue_routes(api: FastAPI, engine: Engine, settings: Settings) -> None:
    @api.get("/v1/campaigns", response_model=list[CampaignSummary], tags=["campaigns"])
    def campaigns(token: BearerToken) -> list[CampaignSummary]:
        with read_session(engine) as session:
            return campaign_summaries(session, user=auth.signed_in(session, token=token))

    @api.get(
        "/v1/campaigns/{name}/next",
        response_model=queue.ItemView,
        responses={204: {"description": "nothing left for the caller"}},
        tags=["queue"],
    )
    def next_item(name: str, token: BearerToken) -> Any:
        with write_session(engine) as session:
            user = auth.signed_in(session, token=token)
            handout = queue.take_lease(session, campaign=name, user=user, lease_seconds=settings.lease_seconds)
            if handout is None:
                return no_content()
            # The view's few reads stay in this transaction: measured with benchmarks/bench_load.py, a second (read)
            # session costs more than they add to the lock, on SQLite and PostgreSQL alike (see the README).
            view = queue.view_of(session, handout)
        return json_model(view)

    @api.post("/v1/campaigns/{name}/skip", status_code=status.HTTP_204_NO_CONTENT, tags=["queue"])
    def skip(name: str, body: SkipIn, token: BearerToken) -> Response:
        with write_session(engine) as session:
            user = auth.signed_in(session, token=token)
            queue.skip_item(session, campaign=name, user=user, item_id=body.item_id, lease_id=body.lease_id)
        return no_content()

    @api.get("/v1/me/progress", tags=["queue"])
    def my_progress(campaign: str, token: BearerToken) -> dict[str, Any]:
        with read_session(engine) as session:
            return answer_service.progress(session, campaign=campaign, user=auth.signed_in(session, token=token))


def _add_answer_routes(api: FastAPI, engine: Engine, settings: Settings) -> None:
    @api.post(
        "/v1/campaigns/{name}/answers",
        response_model=AnswerOut,
        status_code=status.HTTP_201_CREATED,
        responses={200: {"model": AnswerOut, "description": "a retry: the answer stored before"}},
        tags=["answers"],
    )
    def submit(name: str, body: AnswerIn, token: BearerToken) -> Response:
        with read_session(engine) as session:  # a retry of a stored submission is answered off the write lock
            user = auth.signed_in(session, token=token)
            request = {
                "campaign": name,
                "user": user,
                "item_id": body.item_id,
                "lease_id": body.lease_id,
                "submission_id": body.submission_id,
                "answers": body.answers,
                "seconds_spent": body.seconds_spent,
                "max_seconds_spent": settings.max_seconds_spent,
            }
            stored = answer_service.stored_submission(session, **request)
            if stored is not None:
                return json_model(
                    _answer_out(
                        stored, answer_service.values_as_shown(session, campaign=name, user=user, answer=stored)
                    )
                )
        with write_session(engine) as session:
            result = answer_service.submit_answer(session, **request)
            shown = answer_service.values_as_shown(session, campaign=name, user=user, answer=result.answer)
        return json_model(
            _answer_out(result.answer, shown), status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        )

    @api.put("/v1/campaigns/{name}/answers/{item_id}", response_model=AnswerOut, tags=["answers"])
    def revise(name: str, item_id: int, body: ReviseIn, token: BearerToken) -> Response:
        with write_session(engine) as session:
            user = auth.signed_in(session, token=token)
            answer = answer_service.revise_answer(
                session,
                campaign=name,
                user=user,
                item_id=item_id,
                answers=body.answers,
                seconds_spent=body.seconds_spent,
                max_seconds_spent=settings.max_seconds_spent,
            )
            shown = answer_service.values_as_shown(session, campaign=name, user=user, answer=answer)
        return json_model(_answer_out(answer, shown))

    @api.get("/v1/campaigns/{name}/answers/{item_id}", response_model=AnswerOut, tags=["answers"])
    def mine(name: str, item_id: int, token: BearerToken) -> Response:
        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            answer = answer_service.my_answer(session, campaign=name, user=user, item_id=item_id)
            shown = answer_service.values_as_shown(session, campaign=name, user=user, answer=answer)
        return json_model(_answer_out(answer, shown))


def _answer_out(answer: Any, values: dict[str, Any]) -> AnswerOut:
    return AnswerOut(
        answer_id=answer.id,
        item_id=answer.item_id,
        submission_id=answer.submission_id,
        values=values,
        seconds_spent=answer.seconds_spent,
        revision=answer.revision,
    )
