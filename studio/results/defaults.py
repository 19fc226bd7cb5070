"""Defaults of published numbers shared by every front door (CLI, exports, REST, UI), so a number is the same wherever
it is read. No third-party imports: command-line options read them when ``h2h`` starts."""

from __future__ import annotations

#: Bootstrap resamples for Krippendorff's α's interval (1,000 take ~65 ms per question at paper scale).
DEFAULT_RESAMPLES = 1000
#: The most resamples a request may ask for (the REST API clamps to it).
MAX_RESAMPLES = 10_000
