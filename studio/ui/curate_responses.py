"""The opened scenario's responses as a curator reads them: each model's answer, its variant and scores, and its text.

Model output and model names are untrusted: every piece of them goes through :func:`studio.ui.render.escape_text`
(``text_html`` for long texts), so a ``<script>``, an ``<img onerror>`` or a template placeholder in an answer shows
as the characters it is made of. The only markup is fixed here: no link, no image, nothing that runs. A long text
shows its start and a native ``<details>`` holding the whole of it (no server call, no script); the page's stylesheet
(:data:`studio.ui.pages_css.PAGES_CSS`) wraps every text inside its box, so nothing scrolls sideways.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.taxonomy import COMBINED_METRIC, JUDGE_SCORE_NAMES, METRIC_LABELS, TABLE3_METRIC_NAMES
from studio.ui.render import escape_text, text_html

#: A longer text shows this many characters (about six lines of CJK beside the list), then "Show the whole text".
PREVIEW_CHARS = 400
#: The scores shown beside a response's name (``scenario_detail``'s keys → the names the README gives them).
SCORE_LABELS: dict[str, str] = {
    name: METRIC_LABELS[name] for name in (COMBINED_METRIC, *TABLE3_METRIC_NAMES, *JUDGE_SCORE_NAMES)
}


def _score_text(response: Mapping[str, Any]) -> str:
    """E.g. ``S 0.257 · BLEU-4 0.050 · ROUGE-L 0.250 · SS 0.600``: the scores the response has, three decimals."""
    parts = []
    for key, label in SCORE_LABELS.items():
        value = response.get(key)
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            parts.append(f"{label} {float(value):.3f}")
    return " · ".join(parts) or "not scored"


def _whole(text: str, total: int) -> str:
    """The ``<details>`` holding a long text whole (or its first part, saying so, when the store cut it)."""
    shown = f"{total:,} characters"
    cut = ""
    if total > len(text):
        shown = f"the first {len(text):,} of {total:,} characters"
        cut = (
            f'<div class="h2h-cut">Only the first {len(text):,} characters are read here; the whole answer is in the '
            "run directory's responses.jsonl.</div>"
        )
    return (
        f'<details class="h2h-response-whole"><summary>Show the whole text ({escape_text(shown)})</summary>'
        f'<div class="h2h-response-text">{text_html(text)}</div>{cut}</details>'
    )


def response_html(response: Mapping[str, Any]) -> str:
    """One response: model · variant · scores, then its text (escaped; a long one cut, with the whole on demand)."""
    text = str(response.get("text") or "")
    total = int(response.get("text_chars") or len(text))
    who = (
        f'<div class="h2h-response-who"><span class="h2h-response-model">{escape_text(response.get("model"))}</span>'
        f" · {escape_text(response.get('variant'))} · {escape_text(_score_text(response))}</div>"
    )
    if total <= PREVIEW_CHARS and len(text) == total:
        return f'<section class="h2h-response">{who}<div class="h2h-response-text">{escape_text(text)}</div></section>'
    preview = f'<div class="h2h-response-text h2h-response-preview">{escape_text(text[:PREVIEW_CHARS])}…</div>'
    return f'<section class="h2h-response">{who}{preview}{_whole(text, total)}</section>'


def responses_html(responses: Iterable[Mapping[str, Any]]) -> str:
    """Every response of a scenario (``scenario_detail``'s ``responses``), one block each, in the order given."""
    blocks = [response_html(response) for response in responses]
    if not blocks:
        return '<div class="h2h-responses"><p>No model has answered this scenario in the ingested runs.</p></div>'
    head = f'<p class="h2h-responses-head">{len(blocks)} response(s), as the models wrote them.</p>'
    return f'<div class="h2h-responses">{head}{"".join(blocks)}</div>'
