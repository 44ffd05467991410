import type { DataSource } from 'typeorm';
import { getDataSource } from '../db/default-data-source';
import { ElectionService } from '../election/service';
import type { LoopEngine } from '../election/loop/engine/engine';
import type { ScheduleHost } from './host';
import { runsStoreOf } from './store';

/** The {@link ScheduleHost} of a loop engine: what `LeaderElector.schedule` and `LeaderElectorGroup.schedule` run on. */
export function engineScheduleHost(engine: LoopEngine, configured: DataSource | undefined): ScheduleHost {
  const services = new WeakMap<DataSource, ElectionService>();
  return {
    get stopTimeoutMs() {
      return engine.stopTimeoutMs;
    },
    get stopping() {
      return !engine.active;
    },
    get retryMs() {
      return engine.intervalMs;
    },
    clock: engine.databaseClock,
    current: (ns) => engine.current(ns),
    watch: (watcher) => engine.watch(watcher),
    dataSource: () => engine.dataSource ?? configured ?? getDataSource(),
    store: (dataSource) => runsStoreOf(dataSource),
    assertLeader(dataSource, lease, manager) {
      let service = services.get(dataSource);
      if (!service) services.set(dataSource, (service = new ElectionService(dataSource)));
      return service.assertLeader(lease.candidateId, { ns: lease.ns, term: lease.term, session: manager });
    },
    report: (phase, ns, message, cause) => void engine.reporter.fail(phase, ns, message, cause),
    ended: (event) => engine.reporter.emit('scheduleRun', Object.freeze(event)),
  };
}
