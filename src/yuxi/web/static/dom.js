// DOM and formatting helpers.
//
// Safety rule of the whole UI: user and model text only ever reaches the page through
// textContent / text nodes (see `el`), never through innerHTML.

export const $ = (id) => document.getElementById(id);

/** Create an element. Children that are strings become text nodes (never parsed as HTML). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('on') && typeof value === 'function') {
      node.addEventListener(key.slice(2), value);
    } else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

export function pretty(value) {
  if (value === undefined) return '';
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

export function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Tool results are text (usually JSON); show them indented when they parse. Display only. */
export function prettyText(text) {
  if (typeof text !== 'string') return pretty(text);
  const parsed = parseJson(text);
  return parsed === undefined ? text : JSON.stringify(parsed, null, 2);
}

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'short' });

export function formatTime(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? '' : timeFormat.format(date);
}

export function byteLength(text) {
  return new TextEncoder().encode(text).length;
}

export function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}

export function newRequestId() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

const graphemes = globalThis.Intl?.Segmenter ? new Intl.Segmenter(undefined, { granularity: 'grapheme' }) : null;

/**
 * `text` cut to at most `max` characters with an ellipsis, on a character boundary (a grapheme
 * cluster where the browser can tell, else a code point): never half an emoji or a CJK character.
 */
export function shortText(text, max) {
  const s = String(text ?? '');
  const chars = graphemes ? Array.from(graphemes.segment(s), (g) => g.segment) : Array.from(s);
  return chars.length <= max ? s : `${chars.slice(0, max - 1).join('').trimEnd()}…`;
}

const byteUnits = ['bytes', 'KB', 'MB'];

export function formatBytes(n) {
  let value = Number(n) || 0;
  let unit = 0;
  while (value >= 1024 && unit < byteUnits.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} ${byteUnits[0]}` : `${value.toFixed(1)} ${byteUnits[unit]}`;
}
