"""Paging and the curation listings' filters, each declared once, for both front doors and the queries.

A listing's request is one model: :class:`ScenarioFilters` and :class:`ResponseFilters` (which rows, and which page,
from :class:`Paging`). The REST routes take it as their query parameters (``Annotated[ScenarioFilters, Query()]``:
FastAPI lists its fields as the route's parameters and answers a refused value with a 422 naming the field); the
Curate page builds it from its widgets' values (text boxes, "any / yes / no" dropdowns, numbers that arrive as
floats) with :func:`parse` (``InvalidInput`` naming the field); the use cases pass it whole to
``studio.services.curation``. So the two doors accept the same values and refuse the others for the same reasons.
It lives in the services layer, with the queries that apply it, so every layer above may import it.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from studio.errors import InvalidInput
from studio.models.curation import STATUSES
from studio.models.types import STORE_INT_MAX

MAX_PAGE_SIZE = 500
Parsed = TypeVar("Parsed", bound=BaseModel)
#: The page's "any / yes / no" words, and every word a typed boolean query parameter took (pydantic's), so that the
#: REST API accepts what it accepted when its parameters were typed ``bool``.
_TRISTATE = {
    **{"": None, "any": None},
    **dict.fromkeys(("yes", "true", "1", "on", "t", "y"), True),
    **dict.fromkeys(("no", "false", "0", "off", "f", "n"), False),
}


def parse(kind: type[Parsed], /, **values: Any) -> Parsed:
    """A ``kind`` built from ``values``; ``InvalidInput`` naming the first field refused and why. A value for no
    field of ``kind`` is a ``TypeError`` (a front door's mistake, which the model would silently ignore)."""
    unknown = sorted(values.keys() - kind.model_fields.keys())
    if unknown:
        raise TypeError(f"{kind.__name__} has no field {', '.join(unknown)}")
    try:
        return kind.model_validate(values)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or kind.__name__
        raise InvalidInput(f"{field}: {first['msg'].removeprefix('Value error, ')}") from None


def _refused(why: str) -> PydanticCustomError:
    """A refusal whose message is ``why`` alone (a plain ``ValueError`` reads "Value error, ``why``" in FastAPI's
    422 for a query model)."""
    return PydanticCustomError("value_error", why)


def _blank_is_none(value: Any) -> Any:
    """An empty or blank text box means "no filter"."""
    return None if isinstance(value, str) and not value.strip() else value


def _tristate(value: Any) -> Any:
    """``True`` / ``False`` / ``None``, or the words an "any / yes / no" picker sends."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word not in _TRISTATE:
            raise _refused(f"{value[:40]!r} is not one of any, yes, no")
        return _TRISTATE[word]
    return value


class Paging(BaseModel):
    """Which page of a listing: ``page`` from 1, ``page_size`` rows (1-:data:`MAX_PAGE_SIZE`)."""

    model_config = ConfigDict(frozen=True)

    page: int = 1
    page_size: int = 50

    @field_validator("page")
    @classmethod
    def _page(cls, value: int) -> int:
        if value < 1:
            raise _refused("must be 1 or more")
        if value > STORE_INT_MAX:  # the store's offset could not hold it: a 422 naming the page, never a 500
            raise _refused(f"{value} is out of range (at most {STORE_INT_MAX})")
        return value

    @field_validator("page_size")
    @classmethod
    def _page_size(cls, value: int) -> int:
        if not 1 <= value <= MAX_PAGE_SIZE:
            raise _refused(f"must be 1-{MAX_PAGE_SIZE}")
        return value

    def pages(self, total: int) -> int:
        """How many pages ``total`` rows fill (at least one)."""
        return max(1, math.ceil(total / self.page_size))

    def last_for(self, total: int) -> Self:
        """This paging, or the last page when this one lies past the end of ``total`` rows."""
        return self if self.page <= self.pages(total) else self.model_copy(update={"page": self.pages(total)})


#: The scenario list's orders: ``models_disagree`` (the default) puts the scenarios whose crowd models disagree with
#: the majority first (expert review looks at them first too), then by id; ``id``; ``uncertainty``: the LLM
#: pre-screen's most uncertain first (unscreened last).
ScenarioOrder = Literal["models_disagree", "id", "uncertainty"]


class ScenarioFilters(Paging):
    """Which scenarios a curator lists (by subtask, review status, crowd agreement below a share, disagreement,
    models' disagreement, refine flags), in which order, and which page: the arguments of
    ``studio.services.curation.browse_scenarios``."""

    subtask: str | None = None
    status: str | None = None
    agreement_below: float | None = None
    disagreement: bool | None = None
    #: With (or without) crowd models (Dawid–Skene, MACE) that decided otherwise than the majority.
    models_disagree: bool | None = None
    #: With (or without) flags of an ingested refine run (``h2h ingest-curation``).
    flagged: bool | None = None
    #: :data:`ScenarioOrder`; none asked (empty): ``models_disagree``.
    order: ScenarioOrder = "models_disagree"

    @field_validator("order", mode="before")
    @classmethod
    def _order(cls, value: Any) -> Any:
        return "models_disagree" if value in (None, "") else value

    @field_validator("subtask", "status", mode="before")
    @classmethod
    def _blank(cls, value: Any) -> Any:
        return _blank_is_none(value)

    @field_validator("disagreement", "models_disagree", "flagged", mode="before")
    @classmethod
    def _words(cls, value: Any) -> Any:
        return _tristate(value)

    @field_validator("status")
    @classmethod
    def _status(cls, value: str | None) -> str | None:
        if value is not None and value not in STATUSES:
            raise _refused(f"{value[:40]!r} is not one of {', '.join(STATUSES)}")
        return value

    @field_validator("agreement_below", mode="before")
    @classmethod
    def _agreement_number(cls, value: Any) -> Any:
        value = _blank_is_none(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                raise _refused(f"{value[:40]!r} is not a number") from None
        return value

    @field_validator("agreement_below")
    @classmethod
    def _agreement_range(cls, value: float | None) -> float | None:
        if value is not None and not 0.0 <= value <= 1.0:
            raise _refused("must lie in 0-1")
        return value


class ResponseFilters(Paging):
    """Which responses a curator lists (by subtask, model, variant, flagged for adjudication, adjudicated) and which
    page: the arguments of ``studio.services.curation.browse_responses``."""

    subtask: str | None = None
    model: str | None = None
    variant: str | None = None
    flagged: bool | None = None
    adjudicated: bool | None = None

    @field_validator("subtask", "model", "variant", mode="before")
    @classmethod
    def _blank(cls, value: Any) -> Any:
        return _blank_is_none(value)

    @field_validator("flagged", "adjudicated", mode="before")
    @classmethod
    def _words(cls, value: Any) -> Any:
        return _tristate(value)
