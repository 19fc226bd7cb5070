"""How a Gradio handler runs a use case: in the caller's context, with refusals shown to the person.

``studio.web.app`` builds the UI with an ``open_context`` callable: given an event's ``gr.Request`` it returns the
:class:`~studio.usecases.context.RequestContext` of the person behind it (the session cookie's token). A handler
opens it once — one session per event, the caller resolved inside it — and passes ``(session, caller)`` to the use
cases, which authorise the caller on every call. Nothing the browser holds is trusted for authorisation.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlmodel import Session

from studio.models import UserPublic
from studio.usecases.context import RequestContext

#: ``gr.Request`` → the caller's context (``studio.web.deps.request_context`` bound to the studio's engine).
OpenContext = Callable[[Any], RequestContext]


def toast_text(message: object) -> str:
    """``message`` as a Gradio toast shows it literally: Gradio puts a toast's text into the page as (sanitised) HTML,
    which keeps ``<a>`` and ``<form>``, and an error can quote data (a model, judge or campaign name); ``<``, ``>``
    and ``&`` are escaped, so the text stays text."""
    return html.escape(str(message), quote=False)


@contextmanager
def refused_as_gradio_errors() -> Iterator[None]:
    """Turn a use case's refusal or complaint into ``gr.Error`` (written for people; any data it quotes is shown as
    text, see :func:`toast_text`). A store that cannot serve (``StoreUnavailable``, or a store fault raised outside a
    request context) says so: "the database is unavailable ... retry"."""
    import gradio as gr

    from studio.db import is_store_fault
    from studio.services.errors import STORE_UNAVAILABLE, ServiceError

    try:
        yield
    except ServiceError as error:
        raise gr.Error(toast_text(error), duration=10, print_exception=False) from None
    except Exception as error:
        if not is_store_fault(error):
            raise
        raise gr.Error(toast_text(STORE_UNAVAILABLE), duration=10, print_exception=False) from None


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
