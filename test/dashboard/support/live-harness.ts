/**
 * What the dashboard's live tests share: a DataSource that elects (`writer`, with `service`) and
 * one the dashboards read through (`reader`), whose every statement `recorder` keeps; dashboards
 * started on servers of their own, closed after the file; and the errors they report, none
 * expected after each test.
 */
import type { DataSource, DataSourceOptions } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { createDashboard, type Dashboard, type DashboardOptions } from 'gemstone-utils/dashboard';
import type { TestDatabase } from '../../support/databases';
import { serveDashboard, Served, StatementRecorder } from './http';

/** A `leader` event of a namespace stream, as the page receives it. */
export interface LeaderEvent {
  ns: string;
  leaderId: string | null;
  term: number | null;
  metadata: Record<string, unknown> | null;
  at: number;
}

export interface LiveHarness {
  readonly recorder: StatementRecorder;
  readonly errors: unknown[];
  /** Set before the first test. */
  readonly writer: DataSource;
  readonly reader: DataSource;
  readonly service: ElectionService;
  /** A dashboard on `reader` (every `pollMs` unless `options` say otherwise) on a server of its own. */
  start(options?: Omit<DashboardOptions, 'dataSource' | 'onError'>): Promise<{ dashboard: Dashboard; url: string }>;
}

/** Registers the hooks of a live test file on `db` (inside its `describeEachDatabase`). */
export function liveHarness(db: TestDatabase, pollMs: number): LiveHarness {
  const servers: Served[] = [];
  let connected: { writer: DataSource; reader: DataSource; service: ElectionService } | undefined;
  const ready = () => {
    if (!connected) throw new Error('the live harness connects in beforeAll');
    return connected;
  };
  const harness: LiveHarness = {
    recorder: new StatementRecorder(),
    errors: [],
    get writer() {
      return ready().writer;
    },
    get reader() {
      return ready().reader;
    },
    get service() {
      return ready().service;
    },
    async start(options = {}) {
      const dashboard = createDashboard({ dataSource: harness.reader, pollMs, onError: (error) => harness.errors.push(error), ...options });
      const served = await serveDashboard(dashboard);
      servers.push(served);
      return { dashboard, url: served.url };
    },
  };

  beforeAll(async () => {
    const writer = await db.connect();
    const reader = await db.connect({ logger: harness.recorder, logging: true } as Partial<DataSourceOptions>, { createTables: false });
    connected = { writer, reader, service: new ElectionService(writer) };
    harness.recorder.recording = true;
  });

  afterAll(async () => {
    for (const served of servers) await served.close();
  });

  afterEach(() => {
    expect(harness.errors).toEqual([]);
  });

  return harness;
}
