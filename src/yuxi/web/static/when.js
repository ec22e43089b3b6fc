// Times as a person reads them, in the browser's locale and time zone: "today, 09:30",
// "yesterday, 18:05", "3 Mar 2026, 09:30" (the locale decides the words and the order).
// The server's times are ISO 8601 UTC; the exact one stays in the element's `datetime` and its
// tooltip.

import { el } from './dom.js';

const DAY_MS = 24 * 60 * 60 * 1000;

const clock = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit' });
const dated = new Intl.DateTimeFormat(undefined, {
  day: 'numeric', month: 'short', year: 'numeric', hour: 'numeric', minute: '2-digit',
});
const full = new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'long' });
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

function parse(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** Calendar days from `date` to `now` in the local time zone (0: the same day). */
function daysAgo(date, now) {
  const midnight = (d) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  return Math.round((midnight(now) - midnight(date)) / DAY_MS);
}

/**
 * `iso` in words: "today, 09:30" or "yesterday, 09:30" (Intl.RelativeTimeFormat), otherwise
 * the day, month, year and time; '' when it is not a time.
 */
export function humanTime(iso, now = new Date()) {
  const date = parse(iso);
  if (!date) return '';
  const days = daysAgo(date, now);
  if (days === 0 || days === 1) return `${relative.format(-days, 'day')}, ${clock.format(date)}`;
  return dated.format(date);
}

/** A <time> element showing `humanTime(iso)`, the exact time in its tooltip. */
export function timeElement(iso, attrs = {}) {
  const date = parse(iso);
  return el('time', {
    ...attrs,
    datetime: date ? date.toISOString() : null,
    title: date ? full.format(date) : null,
  }, humanTime(iso));
}
