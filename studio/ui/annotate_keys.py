"""The annotate form's keyboard shortcuts: a script for the page's ``<head>`` (documented on the page), and the CSS
that writes each option's key on its button.

Digits choose an option of a question — the *n*-th option is key *n*, as its button says (``1 · Keep``). Which
question, in this order:

1. the question that holds the focus (Tab there, or click one of its options);
2. else the first single-choice (or rating) question of the visible form that is unanswered;
3. else the multiple-choice question the last digit ticked in, so several options can be ticked in a row;
4. else the first multiple-choice question with nothing ticked;
5. else — every question answered, e.g. an answer opened to revise — the question the last digit went to;
6. else the form's first single-choice question (then its first multiple-choice one).

A follow-up question (``when``) appears in the page in the same keystroke that answers the question it depends on
(:mod:`studio.ui.annotate_conditions`), so the next digit already reaches it. Options 10 and up take two digits
typed within :data:`SECOND_DIGIT_MS` (``1`` then ``0`` is option 10): a first digit that could begin a longer number
waits that long for a second one. In a multiple-choice question a digit ticks or unticks an option and keeps the
focus there. Enter submits (in a number question's box too), S skips. Keys typed into text fields are left alone.

S pressed while the item just submitted is still on screen, before the page has the submit's answer, is ignored: it
would name the item just answered, and its skip could reach the server first and refuse the answer (or arrive after it
and claim a skip that did not happen). The server says so too when such a skip arrives anyway (a click on Skip):
:func:`studio.usecases.annotate.skip` tells an answered lease from a skipped one.
"""

from __future__ import annotations

SECOND_DIGIT_MS = 700
#: After Enter, S is ignored while the submitted item is still on screen and the page waits on the server, and at
#: least this long (the moment before Gradio marks the page as waiting).
SUBMIT_HOLD_MS = 1000
#: The rule above as the page states it, under the form.
SHORTCUTS_HELP = (
    "**Keyboard:** digits choose the option with that number (**1–9**; for options 10 and up type both digits "
    "quickly, **1** then **0**) in the question you are on, else in the first unanswered one; a multiple-choice "
    "question takes several digits in a row (each ticks or unticks). Once every question is answered (revising an "
    "answer), digits go to the question the last digit went to, else to the first one. **Tab** moves between "
    "questions, **Enter** submits (in a number box too), **S** skips (not while typing in a text box, nor while the "
    "answer just submitted is on its way)."
)

#: Each option's key written before its label (``1 · Keep``), counted in the order the keys count (a CSS counter, so
#: the label — and what is stored, the option's value — stays as it is). A rating whose options are their own
#: numbers from 1 (``1 — unsafe``, ``2`` …) already shows its keys: it carries ``h2h-keys-shown``.
KEYS_CSS = """
.h2h-key-radio .wrap, .h2h-key-check .wrap { counter-reset: h2h-key; }
.h2h-key-radio .wrap > label, .h2h-key-check .wrap > label { counter-increment: h2h-key; }
.h2h-key-radio .wrap > label > span::before, .h2h-key-check .wrap > label > span::before {
  content: counter(h2h-key) " · "; color: #64748b; font-variant-numeric: tabular-nums;
}
.h2h-key-radio.h2h-keys-shown .wrap > label > span::before { content: none; }
"""

KEYBOARD_SCRIPT = (
    (
        """
<script>
(function () {
  const SECOND_DIGIT_MS = __SECOND_DIGIT_MS__;
  const SUBMIT_HOLD_MS = __SUBMIT_HOLD_MS__;
  let pending = null;  // {group, digits, timer}: a first digit waiting for a second one
  let last = null;  // the question the last digit went to
  const visible = (el) => el && el.offsetParent !== null;
  const usable = (group, form) => group && form.contains(group) && visible(group);
  const isCheck = (group) => group.classList.contains('h2h-key-check');
  const inputsOf = (group) => Array.from(group.querySelectorAll('input[type=radio], input[type=checkbox]'));
  const answered = (group) => group.querySelector('input:checked') !== null;
  function targetGroup(form) {  // the rule in studio/ui/annotate_keys.py's docstring, step by step
    const focused = document.activeElement && document.activeElement.closest('.h2h-key-radio, .h2h-key-check');
    if (usable(focused, form)) return focused;
    const radios = Array.from(form.querySelectorAll('.h2h-key-radio')).filter(visible);
    const checks = Array.from(form.querySelectorAll('.h2h-key-check')).filter(visible);
    const open = radios.find((group) => !answered(group));
    if (open) return open;
    if (usable(last, form) && isCheck(last)) return last;
    const openCheck = checks.find((group) => !answered(group));
    if (openCheck) return openCheck;
    if (usable(last, form)) return last;
    return radios[0] || checks[0] || null;
  }
  function choose(group, number) {
    const input = inputsOf(group)[number - 1];
    if (!input) return;
    input.click();
    last = group;
    if (window.h2hShowAsked) window.h2hShowAsked();  // a follow-up question shows now, for the next digit
    if (input.type === 'checkbox') input.focus();  // more digits tick more of it
  }
  function flush() {
    if (!pending) return;
    clearTimeout(pending.timer);
    const done = pending;
    pending = null;
    choose(done.group, Number(done.digits));
  }
  let submitted = null;  // {shown, at}: the item Enter last submitted, until the page answers
  const shownItem = () => (document.querySelector('#h2h-shown-item textarea, #h2h-shown-item input') || {}).value;
  const waiting = () => document.querySelector('.gradio-container .pending, .gradio-container .generating');
  function submitting() {  // the item on screen is the one just submitted and its answer has not come back yet
    if (!submitted || submitted.shown !== shownItem()) return false;
    return Date.now() - submitted.at < SUBMIT_HOLD_MS || waiting() !== null;
  }
  function submit(form, event) {
    const button = form.querySelector('.h2h-submit');
    if (!button) return;
    event.preventDefault();
    event.stopPropagation();  // Gradio's checkbox toggles on Enter: this listener runs first (capture)
    submitted = {shown: shownItem(), at: Date.now()};
    // After the events of the keys before it have run their course (a digit's choice reaches Gradio's state).
    setTimeout(() => button.click(), 0);
  }
  document.addEventListener('keydown', function (event) {
    const target = event.target || {};
    const tag = (target.tagName || '').toLowerCase();
    const typing = tag === 'textarea' || tag === 'select' || target.isContentEditable ||
      (tag === 'input' && !['radio', 'checkbox', 'button', 'submit'].includes(target.type));
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const form = Array.from(document.querySelectorAll('.h2h-form')).find(visible);
    if (!form) return;
    if (typing) {  // text is left alone, but Enter in a number question's box submits
      if (event.key === 'Enter' && target.closest && target.closest('.h2h-number') && form.contains(target)) {
        submit(form, event);
      }
      return;
    }
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
      submit(form, event);
    } else if (event.key === 's' || event.key === 'S') {
      flush();
      // S right after Enter would skip the item just answered (its skip racing its submit): left alone until the
      // page shows what the submit did.
      if (submitting()) { event.preventDefault(); return; }
      const button = form.querySelector('.h2h-skip');
      if (button) { button.click(); event.preventDefault(); }
    }
  }, true);
})();
</script>
"""
    )
    .replace("__SECOND_DIGIT_MS__", str(SECOND_DIGIT_MS))
    .replace("__SUBMIT_HOLD_MS__", str(SUBMIT_HOLD_MS))
)
