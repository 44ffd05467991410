/**
 * The dashboard's live streams bound what they hold for a client that does not read:
 * four clients that stop reading an overview stream of large pages while the page keeps
 * changing are dropped once their queued output would pass `maxStreamBufferBytes` — told so by a
 * last `dropped` event, reported to `onError` — and the server's queued output stays within the
 * bound all along; a client that reads the same page keeps its stream.
 */
import * as http from 'http';
import * as net from 'net';
import type { DataSource } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { createDashboard } from 'gemstone-utils/dashboard';
import { waitFor } from '../elector/helpers';
import { describeEachDatabase, uuid } from '../support/databases';
import { openEvents, serve } from './support/http';

const POLL_MS = 100;
const NAMESPACES = 100;
/** Metadata as large as the review's (3.9 KB of JSON). */
const METADATA = { blob: 'x'.repeat(3_880) };
const CAP = 1_048_576;
const SLOW_CLIENTS = 4;
/** Holds and renews the namespace whose lease changes the page at every poll (one holder for both tests: another would only follow). */
const renewer = uuid();

const yieldToEvents = () => new Promise((resolve) => setTimeout(resolve, 10));

/** A client that sends its request and never reads a byte of the answer. */
function nonReadingClient(port: number, path: string): net.Socket {
  const socket = net.connect({ port, host: '127.0.0.1' });
  socket.pause();
  socket.on('error', () => {});
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n\r\n`);
  return socket;
}

describeEachDatabase(
  'dashboard live streams: bounded output for clients that do not read',
  (db) => {
    let writer: DataSource;
    let service: ElectionService;

    beforeAll(async () => {
      writer = await db.connect();
      service = new ElectionService(writer);
      for (let i = 0; i < NAMESPACES; i++) await service.elect(uuid(), { ns: `bp-${String(i).padStart(3, '0')}`, metadata: METADATA });
    });

    test(`four non-reading clients of a page of ${NAMESPACES} namespaces with 3.9 KB metadata: dropped with a last event, queued output within the bound`, async () => {
      const reports: unknown[] = [];
      const dashboard = createDashboard({ dataSource: writer, pollMs: POLL_MS, maxStreamBufferBytes: CAP, onError: (error) => reports.push(error) });
      const responses = new Set<http.ServerResponse>();
      const served = await serve((request, response) => {
        if (request.url?.includes('/events')) responses.add(response);
        dashboard(request, response);
      });
      const port = Number(new URL(served.url).port);
      const path = `/api/overview/events?q=bp-&limit=${NAMESPACES}`;
      // The renewals that change the page at every poll (each moves a lease's end).
      let renewing = true;
      const renewals = (async () => {
        while (renewing) {
          await service.elect(renewer, { ns: 'bp-000-renewed', metadata: METADATA });
          await yieldToEvents(); // better-sqlite3 answers synchronously: let the server run between renewals
        }
      })();
      const reader = await openEvents(`${served.url}${path}`);
      const sockets: net.Socket[] = [];
      try {
        const first = await reader.next((e) => e.event === 'overview');
        const eventBytes = Buffer.byteLength(`event: overview\ndata: ${JSON.stringify(first.data)}\n\n`);
        expect(eventBytes).toBeGreaterThan(NAMESPACES * 3_880); // the page is as large as the review's
        for (let i = 0; i < SLOW_CLIENTS; i++) sockets.push(nonReadingClient(port, path));
        await waitFor('the slow streams to open', () => dashboard.streams === SLOW_CLIENTS + 1, 10_000);
        // One event always fits an empty queue; a few hundred bytes for the last, `dropped`, event.
        const perStream = Math.max(CAP, eventBytes * 1.1) + 1_024;
        let peak = 0;
        const slow = () => [...responses].filter((r) => !r.writableFinished).reduce((sum, r) => sum + r.writableLength, 0);
        const deadline = performance.now() + 90_000;
        while (reports.length < SLOW_CLIENTS && performance.now() < deadline) {
          const queued = [...responses].map((r) => r.writableLength);
          for (const q of queued) expect(q).toBeLessThanOrEqual(perStream);
          peak = Math.max(peak, slow());
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        console.log(`peak queued output of ${SLOW_CLIENTS} non-reading streams (${db.name}): ${(peak / 1_048_576).toFixed(2)} MiB; cap ${CAP} bytes per stream, page event ${eventBytes} bytes`);
        expect(reports).toHaveLength(SLOW_CLIENTS);
        for (const report of reports) expect(String(report)).toMatch(/dropped a live stream whose client did not read \(\d+ bytes waiting, maxStreamBufferBytes 1048576\)/);
        expect(peak).toBeLessThanOrEqual(SLOW_CLIENTS * perStream);
        // Their connections end (destroyed when even the last event is not taken): nothing stays queued.
        await waitFor('the dropped streams to end', () => dashboard.streams === 1, 10_000);
        await waitFor('their output to be freed', () => [...responses].every((r) => r.destroyed || r.writableFinished || r.writableLength < CAP), 10_000);
        // The client that reads was not dropped, and still gets the page as it changes.
        const seen = reader.events.length;
        await reader.next((e, i = reader.events.indexOf(e)) => e.event === 'overview' && i >= seen, 10_000);
        expect(reader.events.filter((e) => e.event === 'dropped')).toEqual([]);
      } finally {
        renewing = false;
        await renewals;
        reader.close();
        for (const socket of sockets) socket.destroy();
        await dashboard.close();
        await served.close();
      }
    }, 150_000);

    test('a stream that was dropped says so: its last event is `dropped`, naming the bound', async () => {
      const reports: unknown[] = [];
      const dashboard = createDashboard({ dataSource: writer, pollMs: POLL_MS, maxStreamBufferBytes: 1_024, onError: (error) => reports.push(error) });
      const served = await serve((request, response) => dashboard(request, response));
      const port = Number(new URL(served.url).port);
      // Reads only once the server dropped it: what it then finds queued ends with the `dropped` event.
      const socket = nonReadingClient(port, `/api/overview/events?q=bp-&limit=${NAMESPACES}`);
      try {
        const deadline = performance.now() + 90_000;
        while (reports.length === 0 && performance.now() < deadline) {
          await service.elect(renewer, { ns: 'bp-000-renewed', metadata: METADATA });
          await yieldToEvents();
        }
        expect(reports).toHaveLength(1);
        const chunks: Buffer[] = [];
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.resume();
        const text = () => Buffer.concat(chunks).toString('utf8');
        // The response is chunked: the end of it is the `dropped` event, then the last (empty) chunk.
        await waitFor('the end of the response', () => text().endsWith('\r\n0\r\n\r\n'), 10_000);
        const last = text().slice(text().lastIndexOf('event: ')).replace(/\r\n0\r\n\r\n$/, '').replace(/\r\n$/, '');
        expect(last).toMatch(/^event: dropped\ndata: \{"error":"this stream was dropped: \d+ bytes were waiting for the client \(the bound is 1024\); reconnect to resume"\}\n\n$/);
        // The response ends when the client is dropped; the stream's slot is given back once its
        // work (a poll's read being cancelled at the database) has stopped, a moment later.
        await waitFor('the dropped stream to give back its slot', () => dashboard.streams === 0, 10_000);
      } finally {
        socket.destroy();
        await dashboard.close();
        await served.close();
      }
    }, 150_000);
  },
  { sharedOnly: true },
);
