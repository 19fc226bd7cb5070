"""The REST API: a FastAPI sub-application with the routes of ``studio.web.routes``, mounted at ``/api``.

Its routes start with ``/v1`` (OpenAPI at ``/api/v1/openapi.json``). Errors answer ``{"detail": "<field>:
<problem>"}``: a service's refusal with its status (401, 403, 404, 409, 422), a malformed request with 422, a body
over ``Settings.max_request_bytes`` with 413 before it is read, a store that cannot serve with 503 and ``Retry-After``
(``studio.web.faults``), a per-person limit with 429 and ``Retry-After``, a live session's companion that did not
answer with 502.
"""

from __future__ import annotations

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy import Engine

from studio.db import create_db_engine
from studio.errors import NotAuthenticated, ServiceError, TooManyRequests
from studio.services.text import safe_text
from studio.settings import Settings
from studio.usecases.annotate import AnswerLimits
from studio.web.deps import refuse_unstorable_input
from studio.web.faults import add_store_fault_handlers
from studio.web.middleware import BodySizeLimit
from studio.web.routes import account, admin, annotate, curation, live, results
from studio.web.security import LoginThrottle, StoreLoginThrottle

PREFIX = "/v1"
ROUTERS = (account.router, annotate.router, live.router, results.router, curation.router, admin.router)


def _field_path(location: tuple[object, ...]) -> str:
    # "body" and "query" say where FastAPI found the field; the field's own name is what a caller can act on.
    return ".".join(str(part) for part in location if part not in ("body", "query")) or "body"


async def _service_error(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, ServiceError)
    headers = None
    if isinstance(error, NotAuthenticated):
        headers = {"WWW-Authenticate": "Bearer"}
    elif isinstance(error, TooManyRequests):
        headers = {"Retry-After": str(error.retry_after_seconds)}
    return JSONResponse({"detail": safe_text(error.detail)}, status_code=error.status_code, headers=headers)


async def _validation_error(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    problems = [f"{_field_path(tuple(item['loc']))}: {item['msg']}" for item in error.errors()]
    return JSONResponse({"detail": safe_text("; ".join(problems))}, status_code=422)


def store_engine(settings: Settings) -> Engine:
    """The engine of the settings' store, with their SQLite busy timeout and ``synchronous`` level."""
    return create_db_engine(
        settings.database_url,
        busy_timeout_ms=settings.sqlite_busy_timeout_ms,
        sqlite_synchronous=settings.sqlite_synchronous,
    )


def share_state(app: FastAPI, *, engine: Engine, settings: Settings, throttle: LoginThrottle) -> None:
    """What the dependencies of ``studio.web.deps`` and the pages read from ``request.app.state``."""
    app.state.engine = engine
    app.state.settings = settings
    app.state.throttle = throttle
    app.state.limits = AnswerLimits.from_settings(settings)


def create_api(settings: Settings, engine: Engine | None = None, throttle: LoginThrottle | None = None) -> FastAPI:
    """Build the API sub-application (routes under ``/v1``) on ``engine`` or a new one for the settings' URL.

    ``throttle`` (default: one over the store's failed sign-ins, which every process on ``engine``'s database shares)
    limits failed ``/v1/login`` attempts; pass the app's so the login form counts with it.
    """
    engine = engine or store_engine(settings)
    api = FastAPI(
        title="H2HTalk Studio API",
        version="1",
        openapi_url=f"{PREFIX}/openapi.json",
        docs_url=f"{PREFIX}/docs",
        redoc_url=None,
        # Every route: a NUL or a number past 64 bits in any input is a 422 naming it, not a 500 from the driver.
        dependencies=[Depends(refuse_unstorable_input)],
    )
    share_state(api, engine=engine, settings=settings, throttle=throttle or StoreLoginThrottle(engine=engine))
    api.add_exception_handler(ServiceError, _service_error)
    api.add_exception_handler(RequestValidationError, _validation_error)
    add_store_fault_handlers(api)  # 503 with Retry-After: "the database is unavailable ... retry"
    api.add_middleware(BodySizeLimit, limit=settings.max_request_bytes)
    for router in ROUTERS:
        api.include_router(router)
    return api
