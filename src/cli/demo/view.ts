import Table from 'cli-table3';
import pc from 'picocolors';
import { clock, DEFAULT_LOG_COLUMNS, duration, shortId, tableStyle, wrap } from '../format';

export type Role = 'starting' | 'follower' | 'leader' | 'paused' | 'resumed' | 'killed' | 'stopped';
export type Tone = 'info' | 'good' | 'warn' | 'bad';

/** What the view shows of one worker slot. */
export interface WorkerRow {
  name: string;
  pid: number | undefined;
  candidateId: string | undefined;
  role: Role;
  /** Own term while leading, else the last observed leader's term. */
  term: number | null;
  leaseLeftMs: number | null;
  lastAction: string;
  lastActionAt: number;
}

export interface DemoEvent {
  at: Date;
  text: string;
  tone: Tone;
  /** Frequent events (ledger writes) stay out of the live view's event log. */
  routine?: boolean;
}

export interface Header {
  title: string;
  /** The leader as the database shows it (unexpired lease), already worded; see the supervisor. */
  leader?: string;
  elapsedMs: number;
  durationMs: number;
}

/** Where the demo reports: a live view on a terminal, plain log lines elsewhere. */
export interface DemoOutput {
  event(event: DemoEvent): void;
  render(header: Header, rows: readonly WorkerRow[]): void;
  /** Leaves the terminal as a log would: the final frame stays on screen. */
  close(): void;
}

const paint: Record<Tone, (text: string) => string> = { info: (t) => t, good: pc.green, warn: pc.yellow, bad: pc.red };

const roleText: Record<Role, (text: string) => string> = {
  leader: (t) => pc.bold(pc.green(t)),
  follower: (t) => t,
  starting: pc.dim,
  paused: pc.yellow,
  resumed: pc.yellow,
  killed: pc.red,
  stopped: pc.dim,
};

/** The line as is if it fits, else its text without colors, cut to `width` columns. */
function fit(line: string, width: number): string {
  const plain = line.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
  return plain.length <= width ? line : `${plain.slice(0, Math.max(0, width - 1))}…`;
}

/** The stream's width on a terminal, else {@link DEFAULT_LOG_COLUMNS}. */
function columnsOf(stream: NodeJS.WritableStream): number {
  const tty = stream as Partial<NodeJS.WriteStream>;
  return (tty.isTTY && tty.columns) || DEFAULT_LOG_COLUMNS;
}

/** `prefix text`, the text wrapped so that no line is wider than `width`; later lines indented under the text. */
function eventLines(prefix: string, prefixWidth: number, text: string, width: number): string[] {
  const indent = ' '.repeat(prefixWidth);
  return wrap(text, width - prefixWidth).map((line, i) => `${i === 0 ? prefix : indent}${line}`);
}

/** Colors the part of a line after its first `from` columns (the event text after the stamp). */
function paintAfter(line: string, from: number, color: (text: string) => string): string {
  const cut = line.length - (line.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').length - from);
  return `${line.slice(0, cut)}${color(line.slice(cut))}`;
}

/** Plain lines (`HH:MM:SS.mmm text`) for pipes and CI, to the given stream, wrapped to its width. */
export class PlainLog implements DemoOutput {
  constructor(private readonly stream: NodeJS.WritableStream) {}
  event(event: DemoEvent): void {
    const prefix = `${clock(event.at)} `;
    this.stream.write(`${eventLines(prefix, prefix.length, event.text, columnsOf(this.stream)).join('\n')}\n`);
  }
  render(): void {}
  close(): void {}
}

/** A table redrawn in place (one row per worker) above the latest events. */
export class LiveView implements DemoOutput {
  readonly #events: DemoEvent[] = [];
  #lines = 0;

  constructor(
    private readonly stream: NodeJS.WriteStream,
    private readonly maxEvents = 12,
  ) {
    stream.write('\x1b[?25l'); // hide the cursor while redrawing
  }

  event(event: DemoEvent): void {
    if (event.routine) return;
    this.#events.push(event);
    if (this.#events.length > this.maxEvents) this.#events.shift();
  }

  render(header: Header, rows: readonly WorkerRow[]): void {
    const table = new Table({
      head: ['worker', 'pid', 'candidate', 'role', 'term', 'lease left', 'last action'],
      style: { ...tableStyle(), compact: true },
    });
    const now = Date.now();
    for (const row of rows) {
      table.push([
        row.name,
        row.pid === undefined ? '-' : String(row.pid),
        shortId(row.candidateId),
        roleText[row.role](row.role),
        row.term === null ? '-' : String(row.term),
        duration(row.leaseLeftMs),
        `${row.lastAction} ${pc.dim(`(${duration(now - row.lastActionAt)} ago)`)}`,
      ]);
    }
    const progress = `${(header.elapsedMs / 1000).toFixed(1)}s / ${(header.durationMs / 1000).toFixed(0)}s`;
    // Lines are never wider than the terminal: one the terminal wraps would throw the cursor
    // arithmetic off. Events wrap (their key words are often at the end); the rest is cut.
    const width = this.stream.columns || DEFAULT_LOG_COLUMNS;
    const lines = [
      `${pc.bold(header.title)}  ${pc.dim(progress)}`,
      ...(header.leader === undefined ? [] : [header.leader]),
      ...table.toString().split('\n'),
      pc.bold('events'),
      ...this.#events.flatMap((e) => {
        const stamp = clock(e.at);
        return eventLines(`  ${pc.dim(stamp)} `, stamp.length + 3, e.text, width).map((line) => paintAfter(line, stamp.length + 3, paint[e.tone]));
      }),
    ];
    // Move up over the previous frame and redraw it line by line, clearing leftovers.
    let frame = this.#lines > 0 ? `\x1b[${this.#lines}A` : '';
    frame += lines.map((line) => `\x1b[2K${fit(line, width)}\n`).join('');
    frame += '\x1b[J';
    this.stream.write(frame);
    this.#lines = lines.length;
  }

  close(): void {
    this.stream.write('\x1b[?25h');
  }
}
