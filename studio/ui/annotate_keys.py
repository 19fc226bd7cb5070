"""The annotate form's keyboard shortcuts: a script for the page's ``<head>`` (documented on the page).

Digits choose an option of the question that holds the focus, else of the first unanswered single-choice question
of the visible form, else of the multiple-choice question digits last ticked in, else of its first multiple-choice
question with nothing ticked. Options 10 and up take two
digits typed within :data:`SECOND_DIGIT_MS` (``1`` then ``0`` is option 10): a first digit that could begin a
longer number waits that long for a second one. In a multiple-choice question a digit ticks or unticks an option
and keeps the focus there, so several options can be ticked in a row. Enter submits, S skips. Keys typed into text
fields are left alone.
"""

from __future__ import annotations

SECOND_DIGIT_MS = 700

KEYBOARD_SCRIPT = (
    """
<script>
(function () {
  const SECOND_DIGIT_MS = __SECOND_DIGIT_MS__;
  let pending = null;  // {group, digits, timer}: a first digit waiting for a second one
  let lastCheck = null;  // the multiple-choice question digits last ticked in: more digits tick more of it
  const visible = (el) => el && el.offsetParent !== null;
  const inputsOf = (group) => Array.from(group.querySelectorAll('input[type=radio], input[type=checkbox]'));
  const answered = (group) => group.querySelector('input:checked') !== null;
  function targetGroup(form) {
    const focused = document.activeElement && document.activeElement.closest('.h2h-key-radio, .h2h-key-check');
    if (focused && form.contains(focused) && visible(focused)) return focused;
    const radios = Array.from(form.querySelectorAll('.h2h-key-radio')).filter(visible);
    const open = radios.find((group) => !answered(group));
    if (open) return open;
    if (lastCheck && form.contains(lastCheck) && visible(lastCheck)) return lastCheck;
    return Array.from(form.querySelectorAll('.h2h-key-check')).filter(visible).find((group) => !answered(group));
  }
  function choose(group, number) {
    const input = inputsOf(group)[number - 1];
    if (!input) return;
    input.click();
    if (input.type === 'checkbox') { lastCheck = group; input.focus(); }  // more digits tick more of it
  }
  function flush() {
    if (!pending) return;
    clearTimeout(pending.timer);
    const done = pending;
    pending = null;
    choose(done.group, Number(done.digits));
  }
  document.addEventListener('keydown', function (event) {
    const target = event.target || {};
    const tag = (target.tagName || '').toLowerCase();
    const typing = tag === 'textarea' || tag === 'select' || target.isContentEditable ||
      (tag === 'input' && !['radio', 'checkbox', 'button', 'submit'].includes(target.type));
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    const form = Array.from(document.querySelectorAll('.h2h-form')).find(visible);
    if (!form) return;
    if (/^[0-9]$/.test(event.key)) {
      event.preventDefault();
      if (pending) {
        const digits = pending.digits + event.key;
        if (Number(digits) <= inputsOf(pending.group).length) { pending.digits = digits; flush(); return; }
        flush();
      }
      const group = targetGroup(form);
      if (!group || event.key === '0') return;
      const count = inputsOf(group).length;
      if (Number(event.key) * 10 <= count) {  // could begin 10, 11, ...: wait for a second digit
        pending = {group: group, digits: event.key, timer: setTimeout(flush, SECOND_DIGIT_MS)};
      } else {
        choose(group, Number(event.key));
      }
    } else if (event.key === 'Enter') {
      flush();  // a digit still waiting for its second one counts first
      // Enter on a focused button presses that button (the browser does); elsewhere it submits the form.
      if (tag === 'button' || (tag === 'input' && ['button', 'submit'].includes(target.type))) return;
      const button = form.querySelector('.h2h-submit');
      // Gradio's checkbox toggles on Enter: this listener runs first (capture) and keeps Enter for submitting.
      if (button) { button.click(); event.preventDefault(); event.stopPropagation(); }
    } else if (event.key === 's' || event.key === 'S') {
      flush();
      const button = form.querySelector('.h2h-skip');
      if (button) { button.click(); event.preventDefault(); }
    }
  }, true);
})();
</script>
"""
).replace("__SECOND_DIGIT_MS__", str(SECOND_DIGIT_MS))
