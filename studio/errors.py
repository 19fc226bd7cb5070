"""Service-layer errors; the API maps each to its HTTP status, the CLI and UI to a message."""

from __future__ import annotations


class ServiceError(Exception):
    """Base of every error a service raises on purpose; ``str(error)`` is safe to show the caller."""

    status_code = 400

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class NotAuthenticated(ServiceError):
    status_code = 401


class PermissionDenied(ServiceError):
    status_code = 403


class NotFound(ServiceError):
    status_code = 404


class Conflict(ServiceError):
    status_code = 409


class InvalidInput(ServiceError):
    status_code = 422


class TooManyRequests(ServiceError):
    """A per-person limit (e.g. live messages per minute) was reached; the API answers 429 with ``Retry-After``."""

    status_code = 429
    retry_after_seconds = 60

    def __init__(self, detail: str, *, retry_after_seconds: int = 60) -> None:
        super().__init__(detail)
        self.retry_after_seconds = retry_after_seconds


class CompanionUnavailable(ServiceError):
    """A live session's companion model did not answer (down, timeout, error); the turns so far are kept and the
    message can be retried. ``str(error)`` is the kind words a rater is shown; the technical cause is logged."""

    status_code = 502


class StoreUnavailable(ServiceError):
    """The store cannot serve the request now (down, unreachable, locked, read-only, full); nothing was written.

    Not the caller's fault: the API answers 503 with ``Retry-After``, the pages show the text and stay usable.
    """

    status_code = 503
    #: Seconds a client should wait before retrying (the API's ``Retry-After``).
    retry_after_seconds = 5


#: What a person (or a script) is told when the store is unavailable.
STORE_UNAVAILABLE = (
    "database: the database is unavailable right now, so your answer was not saved (nothing was changed); "
    "retry in a few seconds"
)
