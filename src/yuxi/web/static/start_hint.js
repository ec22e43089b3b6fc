// The empty thread's first-use hint. What it suggests depends on the Memory switch: with
// memory off, "remember: …" would only fail (the tool is not offered), so the hint says memory is
// off and points at the switch instead.

import { $, el } from './dom.js';
import { state } from './state.js';
import { showPlaceholder } from './transcript.js';

/** Draw the eye to the Memory switch in the top bar (the hint's button). */
function pointAtSwitch() {
  const toggle = $('memory-toggle');
  const label = toggle.closest('.switch');
  toggle.focus();
  label.classList.remove('attention');
  void label.offsetWidth; // restart the animation when asked twice
  label.classList.add('attention');
  label.addEventListener('animationend', () => label.classList.remove('attention'), { once: true });
}

function memoryOffHint() {
  return el('div', { class: 'start-hint', 'data-testid': 'memory-off-hint' },
    el('p', { class: 'muted' },
      'Memory is off, so the assistant neither reads nor saves your memory: ',
      '“remember: …” would not work. Turn on the Memory switch at the top to use it.'),
    el('button', {
      type: 'button', class: 'small', 'data-testid': 'memory-hint-switch', onclick: pointAtSwitch,
    }, 'Show the Memory switch'),
    el('p', { class: 'muted' },
      'Meanwhile, try “write file notes/a.md: hi” or just say hello.'));
}

function memoryOnHint() {
  return el('div', { class: 'start-hint', 'data-testid': 'memory-on-hint' },
    el('p', { class: 'muted' },
      'Try “remember: I drink oolong tea”, “what do you remember?” or “write file notes/a.md: hi”.'));
}

/** The placeholder of a thread not started yet. */
export function showStartHint() {
  showPlaceholder(
    el('p', { class: 'empty-title' }, 'Start a thread'),
    state.enableMemory ? memoryOnHint() : memoryOffHint());
  $('transcript').querySelector('[data-testid="empty-transcript"]').dataset.kind = 'start';
}

/** The Memory switch changed: a start hint on screen follows it (any other view is left alone). */
export function refreshStartHint() {
  if ($('transcript').querySelector('[data-testid="empty-transcript"][data-kind="start"]')) showStartHint();
}
