// Server-Sent Events over fetch() (EventSource cannot send an Authorization header): the
// text/event-stream parser, and following one run's events with Last-Event-ID replay.

import { api, ApiError, apiUrl, errorFrom, noteUnauthorized, runPath } from './api.js';
import { parseJson, sleep } from './dom.js';
import { state } from './state.js';
import { SETTLED } from './vocabulary.js';

/** An incremental parser of the text/event-stream format. */
export class SseParser {
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.buffer = '';
    this.lastEventId = '';
    this.resetFrame();
  }

  resetFrame() {
    this.data = [];
    this.eventType = '';
    this.hasData = false;
  }

  push(text) {
    this.buffer += text;
    for (;;) {
      const match = /\r\n|\n|\r/.exec(this.buffer);
      if (!match) return;
      // a lone CR at the very end may be the first half of a CRLF split across chunks
      if (match[0] === '\r' && match.index === this.buffer.length - 1) return;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      this.line(line);
    }
  }

  /** The stream ended: a trailing CR still ends its line; an unfinished frame is dropped. */
  end() {
    if (this.buffer.endsWith('\r')) this.line(this.buffer.slice(0, -1));
    this.buffer = '';
    this.resetFrame();
  }

  line(line) {
    if (line === '') {
      if (this.hasData) {
        this.onEvent({
          id: this.lastEventId,
          event: this.eventType || 'message',
          data: this.data.join('\n'),
        });
      }
      this.resetFrame();
      return;
    }
    if (line.startsWith(':')) return; // comment / keep-alive ping
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      this.data.push(value);
      this.hasData = true;
    } else if (field === 'event') {
      this.eventType = value;
    } else if (field === 'id' && !value.includes('\0')) {
      this.lastEventId = value;
    }
  }
}

/** One connection to a run's events; resolves when the server closes the stream. */
async function readStream(runId, lastId, signal, onFrame) {
  const headers = { Accept: 'text/event-stream', Authorization: `Bearer ${state.token}` };
  if (lastId !== null) headers['Last-Event-ID'] = lastId;
  const resp = await fetch(apiUrl(runPath(runId, '/events')), { headers, signal, cache: 'no-store' });
  if (!resp.ok) {
    const error = await errorFrom(resp);
    noteUnauthorized(resp.status);
    if (resp.status < 500 && resp.status !== 429) throw error;
    throw Object.assign(error, { retry: true });
  }
  const parser = new SseParser(onFrame);
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parser.push(decoder.decode(value, { stream: true }));
  }
  parser.push(decoder.decode());
  parser.end();
}

/**
 * Follow a run's events until it settles. Reconnects with Last-Event-ID when the connection
 * drops early. Resolves with the settled status, or null when aborted.
 */
export async function streamRun(runId, onEvent, signal) {
  let lastId = null;
  let settled = null;
  let failures = 0;
  while (!settled && !signal.aborted) {
    let progressed = false;
    try {
      await readStream(runId, lastId, signal, (frame) => {
        const payload = parseJson(frame.data);
        if (!payload || typeof payload !== 'object' || !payload.type) return;
        lastId = frame.id || (payload.seq !== undefined ? String(payload.seq) : lastId);
        progressed = true;
        onEvent(payload);
        if (payload.type === 'run_status' && SETTLED.has(payload.data?.status)) {
          settled = payload.data.status;
        }
      });
    } catch (err) {
      if (signal.aborted) return null;
      if (err instanceof ApiError && !err.retry) throw err;
    }
    if (settled || signal.aborted) break;
    // Ended before a settled status. The run may have been settled without a final event
    // (e.g. reconciled after a lost lease): ask once before reconnecting.
    try {
      const run = await api('GET', runPath(runId), { signal });
      if (SETTLED.has(run.status) && !progressed) return run.status;
    } catch (err) {
      if (signal.aborted) return null;
      if (err instanceof ApiError && err.status && err.status < 500) throw err;
    }
    failures = progressed ? 0 : failures + 1;
    if (failures > 10) throw new ApiError(0, 'stream_lost', 'Lost the connection to the run’s events.');
    await sleep(Math.min(5000, 250 * 2 ** failures), signal);
  }
  return signal.aborted ? null : settled;
}
