/// <reference types="node" preserve="true" />
import type { ServerResponse } from 'http';

/**
 * The page runs only the package's own script and style, talks only to its own origin, and may
 * not turn text into markup at all (Trusted Types with no policy: any `innerHTML = …` throws).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

/** Headers of every response. */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

export function send(response: ServerResponse, status: number, type: string, body: string | Buffer, headers: Record<string, string> = {}, head = false): void {
  const payload = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  response.writeHead(status, {
    ...SECURITY_HEADERS,
    'cache-control': 'no-store',
    'content-type': type,
    'content-length': String(payload.length),
    ...headers,
  });
  response.end(head ? undefined : payload);
}

export function sendJson(response: ServerResponse, status: number, value: unknown, head = false): void {
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(value), {}, head);
}

/** An error answer: JSON `{ error, parameter? }` (the page shows `error` as text). */
export function sendError(response: ServerResponse, status: number, error: string, extra: Record<string, string> = {}, headers: Record<string, string> = {}): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  send(response, status, 'application/json; charset=utf-8', JSON.stringify({ error, ...extra }), headers);
}

/** Headers of an event stream: never cached, never buffered by a proxy (nginx: `x-accel-buffering`). */
export function eventStreamHeaders(): Record<string, string> {
  return {
    ...SECURITY_HEADERS,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  };
}
