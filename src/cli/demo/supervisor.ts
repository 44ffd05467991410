import { ChildProcess, fork } from 'child_process';
import { randomUUID } from 'crypto';
import * as path from 'path';
import * as readline from 'readline';
import type { DataSource } from 'typeorm';
import { duration, shortId } from '../format';
import { oneLine } from '../errors';
import { readSnapshot } from '../status/query';
import { LeaderlessTracker } from './gap';
import type { SupervisorMessage, WorkerConfig, WorkerMessage } from './messages';
import type { WorkerMetrics } from './metrics-server';
import { DemoOptions, PAUSE_BEYOND_LEASE_MS, POLL_MS, RESPAWN_DELAY_MS } from './options';
import type { DemoEvent, DemoOutput, Tone, WorkerRow } from './view';

/** How long stopping workers may take (elector.stop hands over) before they are killed. */
const STOP_GRACE_MS = 5000;
const WORKER_SCRIPT = path.join(__dirname, 'worker.js');

interface Slot extends WorkerRow {
  index: number;
  /** 1 for the slot's first process, +1 for each process started in its place. */
  generation: number;
  child: ChildProcess | undefined;
  ready: boolean;
  /** Set while this process is the target of a chaos action: its exit is expected. */
  chaosKilled: boolean;
}

/** What the supervisor observed, for the summary. */
export interface Observations {
  kills: number;
  pauses: number;
  fencedRejections: number;
  workerErrors: number;
  longestLeaderlessMs: number | null;
  /** Longest time from a chaos action to another worker's election (host clock). */
  longestTakeoverMs: number | null;
  finalTerm: number | null;
}

/**
 * Runs the worker processes, the chaos monkey and the live view; the ledger verdict is computed
 * afterwards from the database (see `ledger.ts`), not from what the workers said.
 */
export class Supervisor {
  readonly #slots: Slot[] = [];
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #gaps: LeaderlessTracker;
  readonly #startedAt = Date.now();
  #stopping = false;
  #leaderSeen = false;
  #anyReady = false;
  #chaosTurn = 0;
  /** The read of the leader row in flight, if any: run() waits for it before it returns. */
  #polling: Promise<void> | undefined;
  #finalTerm: number | null = null;
  #lastDbNowMs = Number.NaN;
  #fatal: Error | undefined;
  /** The leader as the last poll saw it: the holder of an unexpired lease by the database clock. */
  #currentLeader: string | null = null;
  /** The last poll's leader row; undefined before the first poll. */
  #dbLeader: { leaderId: string | null; term: number | null; leaseLeftMs: number | null } | undefined;
  /** Names of every candidate id this run spawned, including exited ones (a leader row may outlive its process). */
  readonly #names = new Map<string, string>();
  /** The latest chaos action not yet followed by another worker's election (host monotonic clock: display only). */
  #disrupted: { at: number; candidateId: string | undefined } | undefined;
  #longestTakeoverMs: number | null = null;
  /** Metrics requests awaiting each worker's answer, by request id. */
  readonly #metricsRequests = new Map<number, (metrics: object[]) => void>();
  #nextMetricsRequest = 0;
  readonly counts = { kills: 0, pauses: 0, fencedRejections: 0, workerErrors: 0 };

  constructor(
    private readonly options: DemoOptions,
    private readonly url: string,
    private readonly dataSource: DataSource,
    private readonly runId: string,
    private readonly output: DemoOutput,
    private readonly title: string,
  ) {
    this.#gaps = new LeaderlessTracker(options.lease * 1000);
  }

  /** Runs until `duration` is over or {@link requestStop}; resolves after every child exited. */
  async run(): Promise<Observations> {
    for (let i = 0; i < this.options.workers; i++) this.#spawn(i, undefined);
    await new Promise<void>((resolve) => {
      this.#every(POLL_MS, () => void this.#poll());
      this.#every(200, () => this.#render());
      this.#after(this.options.duration * 1000, () => resolve());
      this.requestStop = () => resolve();
    });
    this.#stopping = true;
    // The caller destroys the DataSource after run(): no read may still be on its way then.
    await this.#polling;
    await this.#pollNow();
    this.#gaps.close(this.#lastDbNowMs);
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#event('stopping the workers (each hands over leadership as it stops)', 'info');
    await this.#stopAll();
    this.#render();
    if (this.#fatal) throw this.#fatal;
    return { ...this.counts, longestLeaderlessMs: this.#gaps.longestMs, longestTakeoverMs: this.#longestTakeoverMs, finalTerm: this.#finalTerm };
  }

  /** Ends the run early (Ctrl-C). Replaced by `run()` with its resolver. */
  requestStop: () => void = () => undefined;

  /** Last resort on a second Ctrl-C: SIGKILL every child now. */
  killAll(): void {
    for (const slot of this.#slots) {
      slot.child?.kill('SIGCONT');
      slot.child?.kill('SIGKILL');
    }
  }

  #every(ms: number, work: () => void): void {
    const tick = () => {
      work();
      this.#after(ms, tick);
    };
    this.#after(ms, tick);
  }

  #after(ms: number, work: () => void): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      work();
    }, ms);
    this.#timers.add(timer);
  }

  #event(text: string, tone: Tone, routine = false): void {
    const event: DemoEvent = { at: new Date(), text, tone, routine };
    this.output.event(event);
  }

  #act(slot: Slot, action: string): void {
    slot.lastAction = action;
    slot.lastActionAt = Date.now();
  }

  /**
   * Starts the process of slot `index`, in place of `previous` (exited or killed) if given. Each
   * process has a name of its own (`worker-2`, then `worker-2.2`, `worker-2.3`…): a new process is
   * a new candidate, and "SIGKILL worker-2" followed by "worker-2 became leader" would read as if the
   * killed process had come back.
   */
  #spawn(index: number, previous: Slot | undefined): void {
    const candidateId = randomUUID();
    const generation = (previous?.generation ?? 0) + 1;
    const name = generation === 1 ? `worker-${index + 1}` : `worker-${index + 1}.${generation}`;
    const config: WorkerConfig = {
      name,
      url: this.url,
      ns: this.options.ns,
      runId: this.runId,
      candidateId,
      expireSeconds: this.options.lease,
      workMs: this.options.workMs,
      gapMs: this.options.gapMs,
      unfenced: Boolean(this.options.unfenced),
      metrics: this.options.metricsPort !== undefined,
    };
    // execArgv is inherited: a `-r` preload of the parent (e.g. the TypeORM line switch) applies too.
    const child = fork(WORKER_SCRIPT, [JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    const slot: Slot = {
      index,
      generation,
      name,
      pid: child.pid,
      candidateId,
      role: 'starting',
      term: null,
      leaseLeftMs: null,
      lastAction: 'starting',
      lastActionAt: Date.now(),
      child,
      ready: false,
      chaosKilled: false,
    };
    this.#slots[index] = slot;
    this.#names.set(candidateId, name);
    const started = previous ? `${previous.name} restarted as ${name}` : `${name} started`;
    this.#event(`${started} (pid ${child.pid}, candidate ${shortId(candidateId)})`, 'info');
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      readline.createInterface({ input: stream }).on('line', (line) => {
        if (line.trim() !== '') this.#event(`${name}: ${line}`, 'warn');
      });
    }
    child.on('message', (message: WorkerMessage) => this.#onMessage(slot, message));
    child.on('exit', (code, signal) => this.#onExit(slot, code, signal));
  }

  #onMessage(slot: Slot, message: WorkerMessage): void {
    switch (message.kind) {
      case 'ready':
        slot.ready = true;
        this.#anyReady = true;
        if (slot.role === 'starting') slot.role = 'follower';
        if (slot.lastAction === 'starting') this.#act(slot, 'candidate');
        break;
      case 'elected':
        if (this.#disrupted && this.#disrupted.candidateId !== slot.candidateId) {
          const takeoverMs = performance.now() - this.#disrupted.at;
          this.#longestTakeoverMs = Math.max(this.#longestTakeoverMs ?? 0, takeoverMs);
          this.#disrupted = undefined;
        }
        slot.role = 'leader';
        slot.term = message.term;
        this.#act(slot, `elected (term ${message.term})`);
        this.#event(`${slot.name} became leader (term ${message.term})`, 'good');
        break;
      case 'demoted':
        if (slot.role === 'leader' || slot.role === 'resumed') slot.role = 'follower';
        this.#act(slot, `stepped down (term ${message.term})`);
        this.#event(`${slot.name} stopped leading term ${message.term}: ${message.reason}`, 'warn');
        break;
      case 'leader':
        if (slot.role === 'leader') break;
        slot.term = message.term;
        // The worker's news may be stale (the leader it saw may have died since): the text comes
        // from the database's leader, and the polls keep it current.
        if (message.leaderId !== slot.candidateId) this.#act(slot, this.#followText());
        break;
      case 'working':
        this.#act(slot, `job running (term ${message.term})`);
        break;
      case 'wrote':
        this.#act(slot, `ledger #${message.entryId} (term ${message.term})`);
        this.#event(`${slot.name} committed ledger entry #${message.entryId} (term ${message.term})`, 'info', true);
        break;
      case 'fenced':
        this.counts.fencedRejections++;
        this.#act(slot, `write refused (term ${message.term})`);
        this.#event(
          `${slot.name} write with term ${message.term} refused by assertLeader: leader row is at term ${message.currentTerm ?? '-'}, held by ${this.#nameOf(message.leaderId)}`,
          'warn',
        );
        break;
      case 'error':
        this.counts.workerErrors++;
        this.#event(`${slot.name} error: ${message.message}`, 'bad');
        break;
      case 'stopped':
        this.#act(slot, 'stopped');
        break;
      case 'metrics':
        this.#metricsRequests.get(message.requestId)?.(message.metrics);
        break;
    }
  }

  /**
   * The election metrics of every running worker, asked for over IPC. A worker that does not
   * answer within `timeoutMs` (paused by chaos, busy starting, just killed) is left out of this
   * scrape, as a Prometheus target that fails its scrape would be.
   */
  async workerMetrics(timeoutMs: number): Promise<WorkerMetrics[]> {
    const asked = this.#slots.filter((slot) => slot.child?.connected && slot.ready && slot.role !== 'paused');
    const answers = await Promise.all(
      asked.map(
        (slot) =>
          new Promise<WorkerMetrics | undefined>((resolve) => {
            const requestId = this.#nextMetricsRequest++;
            const done = (metrics: object[] | undefined) => {
              clearTimeout(timer);
              this.#metricsRequests.delete(requestId);
              resolve(metrics && { worker: slot.name, metrics });
            };
            const timer = setTimeout(() => done(undefined), timeoutMs);
            this.#metricsRequests.set(requestId, done);
            const request: SupervisorMessage = { kind: 'metrics-request', requestId };
            try {
              slot.child?.send(request, (error) => {
                if (error) done(undefined);
              });
            } catch {
              done(undefined);
            }
          }),
      ),
    );
    return answers.filter((answer): answer is WorkerMetrics => answer !== undefined);
  }

  #onExit(slot: Slot, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#slots[slot.index] !== slot) return;
    slot.child = undefined;
    slot.leaseLeftMs = null;
    if (this.#stopping) {
      slot.role = 'stopped';
      return;
    }
    if (slot.chaosKilled) {
      slot.role = 'killed';
    } else {
      slot.role = 'stopped';
      this.#event(`${slot.name} exited unexpectedly (${signal ?? `code ${code}`})`, 'bad');
      // Before any worker ever got going, a failing start means the database is unusable: give up.
      // Later (a replacement starting while the others hammer a busy database) it is retried.
      if (!slot.ready && !this.#anyReady) {
        this.#fatal = new Error(`${slot.name} could not start (see the error above)`);
        this.requestStop();
        return;
      }
    }
    this.#after(RESPAWN_DELAY_MS, () => {
      if (!this.#stopping) this.#spawn(slot.index, slot);
    });
  }

  #nameOf(candidateId: string | null): string {
    if (candidateId === null) return 'nobody';
    const slot = this.#slots.find((s) => s.candidateId === candidateId);
    if (slot) return slot.child ? slot.name : `${slot.name} (exited)`;
    const name = this.#names.get(candidateId);
    return name ? `${name} (exited, ${shortId(candidateId)})` : shortId(candidateId);
  }

  /** A follower's last action, from the database's leader (never from a worker's older news). */
  #followText(): string {
    const leaderId = this.#dbLeader?.leaderId ?? null;
    return leaderId ? `following ${this.#nameOf(leaderId)}` : 'no leader: electing';
  }

  /** The view's leader line: only the unexpired leader the database shows, or none. */
  #leaderLine(): string {
    const db = this.#dbLeader;
    if (!db) return 'leader (database): not read yet';
    if (!db.leaderId) return `leader (database): none, no unexpired lease${db.term === null ? '' : ` (last term ${db.term})`}`;
    return `leader (database): ${this.#nameOf(db.leaderId)}, term ${db.term ?? '-'}, lease ${duration(db.leaseLeftMs)} left`;
  }

  /** Follows the database's leader: a log line when it changes, followers' texts kept current. */
  #onLeaderRow(sample: { leaderId: string | null; term: number | null; leaseLeftMs: number | null }): void {
    const before = this.#dbLeader;
    this.#dbLeader = sample;
    if (!before || before.leaderId !== sample.leaderId || (sample.leaderId !== null && before.term !== sample.term)) {
      const text = sample.leaderId
        ? `database: leader is ${this.#nameOf(sample.leaderId)} (term ${sample.term ?? '-'})`
        : before?.leaderId
          ? `database: no leader (the lease of ${this.#nameOf(before.leaderId)} ended)`
          : 'database: no leader yet';
      this.#event(text, sample.leaderId ? 'info' : 'warn');
    }
    this.#refreshFollowers();
  }

  /** Followers' texts from the database's leader as known now (its process may have exited since). */
  #refreshFollowers(): void {
    const leaderId = this.#dbLeader?.leaderId ?? null;
    for (const slot of this.#slots) {
      if (!slot.child || slot.candidateId === leaderId) continue;
      if (!/^(following |no leader)/.test(slot.lastAction)) continue;
      const text = this.#followText();
      if (text !== slot.lastAction) this.#act(slot, text);
    }
  }

  async #poll(): Promise<void> {
    if (this.#polling || this.#stopping) return;
    await this.#pollNow();
  }

  #pollNow(): Promise<void> {
    const polling = this.#read().finally(() => {
      if (this.#polling === polling) this.#polling = undefined;
    });
    this.#polling = polling;
    return polling;
  }

  async #read(): Promise<void> {
    try {
      const snapshot = await readSnapshot(this.dataSource, this.options.ns);
      const row = snapshot.namespaces[0];
      this.#lastDbNowMs = snapshot.dbNowMs;
      this.#finalTerm = row?.term ?? null;
      const sample = {
        dbNowMs: snapshot.dbNowMs,
        leaderId: row?.leaderId ?? null,
        term: row?.term ?? null,
        leaseLeftMs: row?.leaseLeftMs ?? null,
      };
      if (this.#stopping) return;
      this.#onLeaderRow(sample);
      this.#gaps.observe(sample);
      for (const slot of this.#slots) slot.leaseLeftMs = slot.candidateId === sample.leaderId ? sample.leaseLeftMs : null;
      if (sample.leaderId && !this.#leaderSeen && this.options.chaos) {
        this.#leaderSeen = true;
        this.#every(this.options.chaosEvery * 1000, () => this.#chaos());
      }
      this.#currentLeader = sample.leaderId;
    } catch (error) {
      this.#event(`reading the leader row failed: ${oneLine(error)}`, 'bad');
    }
  }

  /** Kills or pauses the current leader (alternating), as the database shows it. */
  #chaos(): void {
    // The database's view first; a leader elected since the last poll has already said so.
    const leader =
      this.#slots.find((s) => s.child && s.candidateId === this.#currentLeader && s.role !== 'paused') ??
      this.#slots.find((s) => s.child && s.role === 'leader');
    if (!leader?.child) {
      this.#event('chaos: no live leader to disrupt right now', 'info');
      return;
    }
    const child = leader.child;
    const kill = this.#chaosTurn++ % 2 === 0;
    this.#disrupted ??= { at: performance.now(), candidateId: leader.candidateId };
    if (kill) {
      this.counts.kills++;
      leader.chaosKilled = true;
      this.#event(`chaos: SIGKILL ${leader.name} (leader, term ${leader.term ?? '-'})`, 'bad');
      this.#act(leader, 'killed by chaos');
      child.kill('SIGKILL');
      return;
    }
    this.counts.pauses++;
    const pauseMs = this.options.lease * 1000 + PAUSE_BEYOND_LEASE_MS;
    this.#event(`chaos: SIGSTOP ${leader.name} (leader, term ${leader.term ?? '-'}) for ${duration(pauseMs)} (> lease)`, 'bad');
    leader.role = 'paused';
    this.#act(leader, 'paused by chaos');
    child.kill('SIGSTOP');
    this.#after(pauseMs, () => {
      if (leader.child !== child) return;
      child.kill('SIGCONT');
      leader.role = 'resumed';
      this.#act(leader, 'resumed');
      this.#event(`chaos: SIGCONT ${leader.name}`, 'info');
    });
  }

  #render(): void {
    const elapsedMs = Date.now() - this.#startedAt;
    this.#refreshFollowers();
    // A worker is shown leading only while the database agrees (it may not have noticed losing the lease).
    const leaderId = this.#dbLeader?.leaderId ?? null;
    const rows = this.#slots.map((slot) => (slot.role === 'leader' && slot.candidateId !== leaderId ? { ...slot, role: 'follower' as const } : slot));
    this.output.render({ title: this.title, leader: this.#leaderLine(), elapsedMs, durationMs: this.options.duration * 1000 }, rows);
  }

  async #stopAll(): Promise<void> {
    const exits = this.#slots.map((slot) => {
      const child = slot.child;
      if (!child) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const force = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
        child.once('exit', () => {
          clearTimeout(force);
          resolve();
        });
        child.kill('SIGCONT'); // a paused worker could not handle SIGTERM
        child.kill('SIGTERM');
      });
    });
    await Promise.all(exits);
  }
}
