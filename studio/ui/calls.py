"""How a Gradio handler runs a use case: in the caller's context, with refusals shown to the person.

``studio.web.app`` builds the UI with an ``open_context`` callable: given an event's ``gr.Request`` it returns the
:class:`~studio.usecases.context.RequestContext` of the person behind it (the session cookie's token). A handler
opens it once — one session per event, the caller resolved inside it — and passes ``(session, caller)`` to the use
cases, which authorise the caller on every call. Nothing the browser holds is trusted for authorisation.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from sqlmodel import Session

from studio.models import UserPublic
from studio.usecases.context import RequestContext

#: ``gr.Request`` → the caller's context (``studio.web.deps.request_context`` bound to the studio's engine).
OpenContext = Callable[[Any], RequestContext]
Handler = TypeVar("Handler", bound=Callable[..., Any])


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
    from studio.errors import STORE_UNAVAILABLE, ServiceError

    try:
        yield
    except ServiceError as error:
        refusal = gr.Error(toast_text(error), duration=10, print_exception=False)
        refusal.status_code = error.status_code  # read by :func:`says_refusals`
        raise refusal from None
    except Exception as error:
        if not is_store_fault(error):
            raise
        refusal = gr.Error(toast_text(STORE_UNAVAILABLE), duration=10, print_exception=False)
        refusal.status_code = 503
        raise refusal from None


#: Refusals a person meets by using the page as it is (bad or stale input, a store that cannot serve): said beside
#: the form. Not signed in / not allowed are for crafted calls only (the page hides what a role may not use): those
#: stay Gradio errors.
SAID_ON_THE_PAGE = frozenset({400, 404, 409, 422, 503})


def says_refusals(outputs: int) -> Callable[[Handler], Handler]:
    """Decorate a handler whose first of ``outputs`` outputs is its message line: a refusal of the input (bad, stale or
    conflicting) or a store that cannot serve becomes that message, shown as an error, and the other outputs are left
    as they are (``gr.skip()``) — no toast over the page, no red "Error" over tables and fields, what was typed stays.
    Nothing was committed: the refusal rolled the event's transaction back before it got here."""
    import gradio as gr

    from studio.ui.render import render_message

    def decorate(handler: Handler) -> Handler:
        @functools.wraps(handler)
        def said(*args: Any, **kwargs: Any) -> Any:
            try:
                return handler(*args, **kwargs)
            except gr.Error as refusal:
                if getattr(refusal, "status_code", None) not in SAID_ON_THE_PAGE:
                    raise
                message = render_message(html.unescape(str(refusal.message)), kind="error")
                return [message, *[gr.skip()] * (outputs - 1)]

        return cast(Handler, said)

    return decorate


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
