"""Conditional questions shown and hidden in the page, with no server call.

A question with ``when`` (e.g. sap_safety's ``violation_kind``, asked when ``violation`` is ``yes``) is built visible;
the page script below hides its box while its condition does not hold, and shows it the moment it does — in the
same keystroke or click that answers the question it depends on. Before, the server decided (a round trip of ~0.4
s after each change), so digits typed for the follow-up question while it was still hidden went nowhere and the
answer was stored with fewer options than were typed.

Each form carries its rules as data (:func:`conditions_html`, a hidden element); the script applies the rule
:func:`studio.ui.forms.is_asked` states, in question order: a question is asked when each question its ``when``
names is itself asked and its answer, written as the server writes it (``str`` of the value), is among the allowed
values. The server still checks ``when`` on every submit (:meth:`studio.workflows.WorkflowSchema.validate_answers`),
and a value left in a hidden question is no answer (:func:`studio.ui.forms.answers_from_form`).

The script recomputes on every input and change event (so the keyboard script's digit is followed at once:
``window.h2hShowAsked``), when the page redraws (a new item, a revised answer opened: a DOM observer) and twice a
second (a text box set by the server changes neither).
"""

from __future__ import annotations

import json

from studio.ui.render import escape_attribute
from studio.workflows import WorkflowSchema

#: The attribute the script sets on the box of a question that is not asked (styled ``display: none``).
UNASKED_ATTRIBUTE = "data-h2h-unasked"
CONDITIONS_ATTRIBUTE = "data-h2h-conditions"
CONDITIONS_CSS = f"[{UNASKED_ATTRIBUTE}] {{ display: none !important; }}\n"


def condition_rules(schema: WorkflowSchema, name: str) -> list[dict[str, object]]:
    """The form's conditional questions in question order, each as its box's element id and, per question its
    ``when`` names, that question's field id, box id and allowed values (``name``: the form's element-id name)."""
    return [
        {
            "box": f"q-box-{name}-{question.id}",
            "when": [[f"q-{name}-{other}", f"q-box-{name}-{other}", list(allowed)] for other, allowed in when.items()],
        }
        for question in schema.questions
        if (when := question.when)
    ]


def conditions_html(schema: WorkflowSchema, name: str) -> str:
    """A hidden element carrying the form's :func:`condition_rules` for the page script ("" when it has none)."""
    rules = condition_rules(schema, name)
    if not rules:
        return ""
    data = escape_attribute(json.dumps(rules, ensure_ascii=True))
    return f'<span hidden class="h2h-conditions" {CONDITIONS_ATTRIBUTE}="{data}"></span>'


CONDITIONS_SCRIPT = (
    (
        """
<script>
(function () {
  const UNASKED = '__UNASKED__';
  // A question's answer as the server writes it in a `when` check (str() of the value): a radio's chosen option,
  // a checkbox group's ticked options as a Python list, a text box's text; 'None' when unanswered.
  function answerOf(field) {
    if (!field) return 'None';
    if (field.querySelector('input[type=radio]')) {
      const on = field.querySelector('input[type=radio]:checked');
      return on ? on.value : 'None';
    }
    const ticks = Array.from(field.querySelectorAll('input[type=checkbox]'));
    if (ticks.length) {
      const on = ticks.filter((box) => box.checked).map((box) => "'" + box.value + "'");
      return on.length ? '[' + on.join(', ') + ']' : 'None';
    }
    const text = field.querySelector('input, textarea');
    return text && text.value !== '' ? text.value : 'None';
  }
  function showAsked() {
    for (const holder of document.querySelectorAll('[__CONDITIONS__]')) {
      let rules;
      try { rules = JSON.parse(holder.getAttribute('__CONDITIONS__')); } catch (error) { continue; }
      const hidden = new Set();  // boxes of questions not asked: their answers count as none
      for (const rule of rules) {
        const asked = rule.when.every(([field, box, allowed]) =>
          allowed.includes(hidden.has(box) ? 'None' : answerOf(document.getElementById(field))));
        if (!asked) hidden.add(rule.box);
        const box = document.getElementById(rule.box);
        if (box && box.hasAttribute(UNASKED) === asked) {  // write only a change: the observer sees no echo
          if (asked) box.removeAttribute(UNASKED); else box.setAttribute(UNASKED, '');
        }
      }
    }
  }
  window.h2hShowAsked = showAsked;
  document.addEventListener('input', showAsked, true);
  document.addEventListener('change', showAsked, true);
  function observe() {
    const watch = {subtree: true, childList: true, attributes: true, attributeFilter: ['aria-checked', 'class']};
    new MutationObserver(showAsked).observe(document.body, watch);
    showAsked();
  }
  if (document.body) observe(); else document.addEventListener('DOMContentLoaded', observe);
  setInterval(showAsked, 500);
})();
</script>
"""
    )
    .replace("__UNASKED__", UNASKED_ATTRIBUTE)
    .replace("__CONDITIONS__", CONDITIONS_ATTRIBUTE)
)
