"""The REST API (FastAPI) over the service layer, served under ``/api/v1`` (OpenAPI at ``/api/v1/openapi.json``).

:func:`create_api` returns a FastAPI sub-application whose routes start with ``/v1``; ``studio.app``
mounts it at ``/api``. Every endpoint resolves the caller from ``Authorization: Bearer <token>`` on
the server, in the first session the route opens, and the services check what their role allows. Errors answer
``{"detail": "<field>: <problem>"}``. Using someone else's lease answers 403.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request, Response, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from sqlalchemy import Engine
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from studio.security import LoginThrottle
from studio.services.errors import NotAuthenticated, ServiceError
from studio.services.text import safe_text
from studio.settings import Settings

PREFIX = "/v1"


class LoginIn(BaseModel):
    username: str = Field(min_length=1, max_length=64)
    password: str = Field(min_length=1, max_length=1024)


class TokenOut(BaseModel):
    token: str


class SkipIn(BaseModel):
    item_id: int
    lease_id: str = Field(min_length=1, max_length=64)


class AnswerIn(BaseModel):
    item_id: int
    lease_id: str = Field(min_length=1, max_length=64)
    submission_id: str = Field(min_length=1, max_length=128)
    answers: dict[str, Any]
    seconds_spent: float | None = None


class ReviseIn(BaseModel):
    answers: dict[str, Any]
    seconds_spent: float | None = None


class AnswerOut(BaseModel):
    """The caller's stored answer, with pairwise choices shown as the A/B they picked."""

    answer_id: int
    item_id: int
    submission_id: str
    values: dict[str, Any]
    seconds_spent: float | None
    revision: int


def _field_path(location: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in location if part != "body") or "body"


async def _service_error(_request: Request, error: ServiceError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(error, NotAuthenticated) else None
    return JSONResponse({"detail": safe_text(error.detail)}, status_code=error.status_code, headers=headers)


async def _validation_error(_request: Request, error: RequestValidationError) -> JSONResponse:
    problems = [f"{_field_path(tuple(item['loc']))}: {item['msg']}" for item in error.errors()]
    return JSONResponse({"detail": safe_text("; ".join(problems))}, status_code=422)


def too_large_detail(limit: int) -> str:
    return f"body: the request body is larger than {limit} bytes"


class BodySizeLimit:
    """Plain ASGI middleware: a request body over ``limit`` bytes answers 413 ``{"detail": "body: ..."}``.

    A declared ``Content-Length`` over the limit is refused before a byte is read; a streamed
    (chunked) body is counted as it arrives and refused once it passes the limit. Not FastAPI's
    ``max_body_size``: that answers a declared oversize body in plain text, not in the API's JSON shape.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.limit:
            await JSONResponse({"detail": too_large_detail(self.limit)}, status_code=413)(scope, receive, send)
            return
        received = 0

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:  # FastAPI passes an HTTPException raised while reading the body on as-is
                    raise StarletteHTTPException(status_code=413, detail=too_large_detail(self.limit))
            return message

        await self.app(scope, counted_receive, send)


def bearer_token(request: Request) -> str:
    """The token of an ``Authorization: Bearer`` header; ``NotAuthenticated`` when there is none."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise NotAuthenticated("authorization: send 'Authorization: Bearer <token>' (POST /api/v1/login)")
    return token.strip()


async def request_token(request: Request) -> str:
    """Dependency: the request's bearer token, or ``NotAuthenticated`` (401) when it sends none.

    It reads a header only: being ``async`` it runs on the event loop, with no worker-thread hop. The
    route then resolves the person with :func:`studio.services.auth.signed_in` inside its own session
    (one session per request). So a request without a token is refused before anything else; one
    with an unknown token is refused once its parameters are well-formed (their shape is public in the
    OpenAPI document anyway).
    """
    return bearer_token(request)


#: The ``token`` parameter of every authenticated route.
BearerToken = Annotated[str, Depends(request_token)]


def create_api(settings: Settings, engine: Engine | None = None, throttle: LoginThrottle | None = None) -> FastAPI:
    """Build the API sub-application (routes under ``/v1``) on ``engine`` or a new one for the settings' URL.

    ``throttle`` (default: a new one) limits failed ``/v1/login`` attempts; pass the app's to share counts.
    """
    from studio.api_results import create_results_router
    from studio.api_routes import add_routes
    from studio.db import create_db_engine

    engine = engine or create_db_engine(settings.database_url, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
    api = FastAPI(
        title="H2HTalk Studio API",
        version="1",
        openapi_url=f"{PREFIX}/openapi.json",
        docs_url=f"{PREFIX}/docs",
        redoc_url=None,
    )
    api.state.engine, api.state.settings = engine, settings
    api.add_exception_handler(ServiceError, _service_error)
    api.add_exception_handler(RequestValidationError, _validation_error)
    api.add_middleware(BodySizeLimit, limit=settings.max_request_bytes)

    add_routes(api, engine, settings, throttle or LoginThrottle())
    api.include_router(create_results_router(engine))
    return api


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
