"""Where ``studio.ui.tables`` finds :class:`~studio.services.listing.Paging`.

The listing models (paging, the curation filters) and :func:`~studio.services.listing.parse` live in
:mod:`studio.services.listing`, in the services layer with the queries that apply them; this name is kept for the
importers that still use it.
"""

from __future__ import annotations

from studio.services.listing import Paging, ResponseFilters, ScenarioFilters, parse

__all__ = ["Paging", "ResponseFilters", "ScenarioFilters", "parse"]
