"""The stylesheet of the pages where people decide (Curate, Research, Admin), added to the studio's ``UI_CSS``.

Fixed rules only (no data). Every long text wraps inside its box, so a 1400 px screen never scrolls sideways.
"""

from __future__ import annotations

PAGES_CSS = """
/* Curate: the opened scenario's responses (studio.ui.curate_responses). */
.h2h-responses { display: flex; flex-direction: column; gap: 10px; }
.h2h-responses-head { margin: 0; font-size: 0.9em; color: #475569; }
.h2h-response { border: 1px solid #e2e8f0; border-radius: 8px; padding: 8px 12px; min-width: 0; }
.h2h-response-who { font-size: 0.85em; color: #475569; margin-bottom: 4px; overflow-wrap: anywhere; }
.h2h-response-model { font-weight: 600; color: #1e293b; }
.h2h-response-text { white-space: normal; overflow-wrap: anywhere; word-break: break-word; }
.h2h-response-whole > summary { cursor: pointer; color: #1d4ed8; margin-top: 4px; font-size: 0.9em; }
.h2h-response-whole .h2h-response-text { max-height: 40em; overflow-y: auto; overflow-x: hidden; margin-top: 4px; }
/* Opened, the whole text replaces the start shown above it. */
.h2h-response:has(> .h2h-response-whole[open]) > .h2h-response-preview { display: none; }
/* Research: Table 2's 17 columns in the page's width (studio.ui.tables.fitted): a denser type and tighter cells. */
#h2h-leaderboard .cell-wrap { padding: 4px; }
#h2h-leaderboard .cell-wrap span { font-size: 12px; line-height: 16px; }
"""
