"""How a Gradio handler runs a use case: in the caller's context, with refusals shown to the person.

``studio.web.app`` builds the UI with an ``open_context`` callable: given an event's ``gr.Request`` it returns the
:class:`~studio.usecases.context.RequestContext` of the person behind it (the session cookie's token). A handler
opens it once — one session per event, the caller resolved inside it — and passes ``(session, caller)`` to the use
cases, which authorise the caller on every call. Nothing the browser holds is trusted for authorisation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlmodel import Session

from studio.models import UserPublic
from studio.usecases.context import RequestContext

#: ``gr.Request`` → the caller's context (``studio.web.deps.request_context`` bound to the studio's engine).
OpenContext = Callable[[Any], RequestContext]


@contextmanager
def refused_as_gradio_errors() -> Iterator[None]:
    """Turn a use case's refusal or complaint into ``gr.Error`` (its text is written for people and is safe)."""
    import gradio as gr

    from studio.services.errors import ServiceError

    try:
        yield
    except ServiceError as error:
        raise gr.Error(str(error), duration=10, print_exception=False) from None


@contextmanager
def reading(open_context: OpenContext, request: Any) -> Iterator[tuple[Session, UserPublic]]:
    """The event's read session and caller; a refusal becomes ``gr.Error``."""
    with refused_as_gradio_errors(), open_context(request).reading() as opened:
        yield opened


@contextmanager
def writing(open_context: OpenContext, request: Any) -> Iterator[tuple[Session, UserPublic]]:
    """The event's write transaction and caller; a refusal becomes ``gr.Error`` (and nothing is committed)."""
    with refused_as_gradio_errors(), open_context(request).writing() as opened:
        yield opened
