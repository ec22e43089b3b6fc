// Assistant replies rendered as Markdown. The one place where model text becomes HTML, so every
// step is closed: marked (vendored) turns the text into HTML with raw HTML from the model escaped,
// DOMPurify (vendored) sanitises the result into a fragment (no scripts, styles, frames, forms,
// event handlers; only http(s)/mailto links and no images fetched from elsewhere), and links open
// in a new tab without an opener or a referrer. Everything else in the UI stays text-only (dom.js).

import { Marked } from './vendor/marked.esm.js';
import DOMPurify from './vendor/purify.es.js';

// Raw HTML in a reply is shown as text, never parsed: the model may echo hostile text.
const escapeHtml = (text) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const parser = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    html({ text }) { return escapeHtml(text); },
  },
});

const SAFE_URL = /^(?:https?:|mailto:|#)/i;

const PURIFY_CONFIG = {
  ALLOWED_TAGS: [
    'p', 'br', 'hr', 'strong', 'em', 'del', 's', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li',
    'a', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'input',
  ],
  ALLOWED_ATTR: ['href', 'title', 'align', 'start', 'type', 'checked', 'disabled'],
  FORBID_TAGS: ['style', 'script', 'iframe', 'form', 'img', 'svg', 'math', 'object', 'embed'],
  ALLOW_DATA_ATTR: false,
  ALLOWED_URI_REGEXP: SAFE_URL,
  RETURN_DOM_FRAGMENT: true,
};

let hooked = false;

function addHooks() {
  if (hooked) return;
  hooked = true;
  DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A') {
      const href = node.getAttribute('href') || '';
      if (!SAFE_URL.test(href.trim())) node.removeAttribute('href');
      if (node.hasAttribute('href') && !href.startsWith('#')) {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer');
      }
    }
    if (node.tagName === 'INPUT') {
      // only a task list's checkbox, and it cannot be changed
      if (node.getAttribute('type') !== 'checkbox') node.remove();
      else node.setAttribute('disabled', '');
    }
  });
}

/** A sanitised DOM fragment of `text` rendered as Markdown (never a string of HTML). */
export function markdownFragment(text) {
  addHooks();
  const html = parser.parse(String(text ?? ''), { async: false });
  return DOMPurify.sanitize(html, PURIFY_CONFIG);
}
