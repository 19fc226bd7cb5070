"""Accessibility basics checked in the browser: every visible control has an accessible name, and the keyboard's
focus order (Tab) can be read back to compare with the form's order."""

from __future__ import annotations

from typing import Any

#: A control a person operates: form fields, buttons, links with a target, and ARIA widgets.
_CONTROLS = (
    "input:not([type=hidden]), select, textarea, button, a[href], "
    "[role=button], [role=radio], [role=checkbox], [role=combobox], [role=slider], [role=tab], [role=textbox]"
)

_UNLABELLED_JS = """
(selector) => {
  const visible = (el) => !!(el.offsetParent || el.getClientRects().length) &&
      getComputedStyle(el).visibility !== 'hidden';
  const named = (el) => {
    if ((el.getAttribute('aria-label') || '').trim()) return true;
    const by = el.getAttribute('aria-labelledby');
    if (by && by.split(/\\s+/).some((id) => (document.getElementById(id)?.textContent || '').trim())) return true;
    if (el.labels && Array.from(el.labels).some((label) => label.textContent.trim())) return true;
    if (el.closest('label') && el.closest('label').textContent.trim()) return true;
    const type = (el.getAttribute('type') || '').toLowerCase();
    if (['submit', 'button', 'reset'].includes(type) && (el.value || '').trim()) return true;
    if (['button', 'a'].includes(el.tagName.toLowerCase()) || el.getAttribute('role')) {
      if ((el.textContent || '').trim()) return true;
    }
    return !!(el.getAttribute('title') || '').trim();
  };
  const describe = (el) => {
    const tag = el.tagName.toLowerCase();
    const id = el.id ? '#' + el.id : '';
    const type = el.getAttribute('type') ? `[type=${el.getAttribute('type')}]` : '';
    const holder = el.closest('[id]');
    return `${tag}${id}${type} in #${holder ? holder.id : '?'}`;
  };
  return Array.from(document.querySelectorAll(selector)).filter(visible).filter((el) => !named(el)).map(describe);
}
"""


def unlabelled_controls(page: Any, *, within: str = "body") -> list[str]:
    """Describe each visible control under ``within`` that has no accessible name (empty: all are named)."""
    selector = ", ".join(f"{within} {part.strip()}" for part in _CONTROLS.split(","))
    return list(page.evaluate(_UNLABELLED_JS, selector))


def tab_order(page: Any, *, presses: int) -> list[str]:
    """Press Tab ``presses`` times from the current focus and return what each stop was: its accessible label,
    else its id, else its tag (for comparing the focus order with the order of the form)."""
    stops = []
    for _ in range(presses):
        page.keyboard.press("Tab")
        stops.append(
            page.evaluate(
                """() => { const el = document.activeElement; if (!el) return '';
                  const label = el.getAttribute('aria-label') || (el.labels && el.labels[0]?.textContent) || '';
                  return (label || el.id || el.tagName).trim(); }"""
            )
        )
    return stops
