// The words of a search marked in a snippet: <mark> elements and text nodes built with the DOM,
// never HTML. Which messages match is the server's decision (its terms, its stemming); the marks
// are a reading aid: a word of the query, a simple form of it (paint / painted / paints), and in
// Han, Hiragana or Katakana text any two-character piece of a query run (the server's bigrams).

import { el } from './dom.js';

const CJK_CHARS = '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}';
/** A run of Han / Hiragana / Katakana, or a run of other letters and digits (a word). */
const RUN = new RegExp(`[${CJK_CHARS}]+|(?:(?![${CJK_CHARS}])[\\p{L}\\p{N}])+`, 'gu');
const CJK = new RegExp(`[${CJK_CHARS}]`, 'u');
/** A word and a query word this alike (sharing this much of a start) are marked. */
const SHARED_START = 4;

function fold(text) {
  return text.normalize('NFKC').toLowerCase();
}

/** The query's words and its CJK pieces (one character alone, else every two in a row). */
function queryTerms(query) {
  const words = new Set();
  const pieces = new Set();
  for (const [run] of fold(String(query ?? '')).matchAll(RUN)) {
    if (!CJK.test(run)) {
      words.add(run);
      continue;
    }
    const chars = Array.from(run);
    if (chars.length === 1) pieces.add(chars[0]);
    for (let k = 0; k + 1 < chars.length; k += 1) pieces.add(chars[k] + chars[k + 1]);
  }
  return { words: [...words], pieces };
}

function alike(word, term) {
  if (word === term) return true;
  if (word.length < SHARED_START || term.length < SHARED_START) {
    return word === `${term}s` || term === `${word}s`;
  }
  let shared = 0;
  while (shared < word.length && word[shared] === term[shared]) shared += 1;
  return shared >= Math.max(SHARED_START, Math.min(word.length, term.length) - 2);
}

/** [start, end) ranges of `text` (UTF-16 indices) to mark for `query`, merged and sorted. */
export function markRanges(text, query) {
  const { words, pieces } = queryTerms(query);
  const ranges = [];
  for (const found of String(text).matchAll(RUN)) {
    const run = found[0];
    if (!CJK.test(run)) {
      const folded = fold(run);
      if (words.some((w) => alike(folded, w))) ranges.push([found.index, found.index + run.length]);
      continue;
    }
    const chars = Array.from(run);
    let offset = found.index;
    for (let i = 0; i < chars.length; i += 1) {
      const two = i + 1 < chars.length ? chars[i] + chars[i + 1] : null;
      if (two && pieces.has(fold(two))) ranges.push([offset, offset + two.length]);
      else if (pieces.has(fold(chars[i]))) ranges.push([offset, offset + chars[i].length]);
      offset += chars[i].length;
    }
  }
  ranges.sort((a, b) => a[0] - b[0]);
  const merged = [];
  for (const range of ranges) {
    const last = merged[merged.length - 1];
    if (last && range[0] <= last[1]) last[1] = Math.max(last[1], range[1]);
    else merged.push([...range]);
  }
  return merged;
}

/** `text` with the words of `query` wrapped in <mark> (text nodes otherwise). */
export function markedText(text, query) {
  const value = String(text ?? '');
  const fragment = document.createDocumentFragment();
  let at = 0;
  for (const [start, end] of markRanges(value, query)) {
    if (start > at) fragment.append(value.slice(at, start));
    fragment.append(el('mark', { 'data-testid': 'search-mark' }, value.slice(start, end)));
    at = end;
  }
  if (at < value.length) fragment.append(value.slice(at));
  return fragment;
}
