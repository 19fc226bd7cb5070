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
