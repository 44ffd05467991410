/** `schedule()`'s options: every bad value is a ValidationError naming the parameter; defaults; frozen. */
import { ValidationError } from 'gemstone-utils';
import { checkScheduleOptions, DEFAULT_CATCH_UP_WINDOW_MS, DEFAULT_MAX_ATTEMPTS } from '../../dist/src/schedules/options';

function rejects(options: unknown, parameter: string): void {
  let caught: unknown;
  try {
    checkScheduleOptions(options);
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ValidationError);
  expect((caught as ValidationError).parameter).toBe(parameter);
}

test('defaults, frozen', () => {
  const o = checkScheduleOptions({ name: 'report', cron: '0 3 * * *' });
  expect(o).toMatchObject({
    name: 'report',
    cron: '0 3 * * *',
    everyMs: null,
    timeZone: 'UTC',
    catchUp: 'latest',
    catchUpWindowMs: DEFAULT_CATCH_UP_WINDOW_MS,
    overlap: 'wait',
    maxAttempts: DEFAULT_MAX_ATTEMPTS,
  });
  expect(DEFAULT_CATCH_UP_WINDOW_MS).toBe(3_600_000);
  expect(DEFAULT_MAX_ATTEMPTS).toBe(3);
  expect(Object.isFrozen(o)).toBe(true);
  expect(checkScheduleOptions({ name: 'x', everyMs: 1000, catchUp: 'all', overlap: 'skip', catchUpWindowMs: 1000, maxAttempts: 1 })).toMatchObject({
    everyMs: 1000,
    cron: null,
    catchUp: 'all',
    overlap: 'skip',
    catchUpWindowMs: 1000,
    maxAttempts: 1,
  });
  expect(checkScheduleOptions({ name: 'x'.repeat(100), cron: '*/5 * * * * *', timeZone: 'Europe/Berlin' }).timeZone).toBe('Europe/Berlin');
});

test('name', () => {
  rejects(undefined, 'options');
  rejects({ cron: '* * * * *' }, 'options.name');
  rejects({ name: '', cron: '* * * * *' }, 'options.name');
  rejects({ name: 'x'.repeat(101), cron: '* * * * *' }, 'options.name');
  rejects({ name: 7, cron: '* * * * *' }, 'options.name');
  rejects({ name: 'a\u0000b', cron: '* * * * *' }, 'options.name');
  rejects({ name: '\ud800', cron: '* * * * *' }, 'options.name');
  rejects({ name: 'x', cron: '* * * * *', extra: 1 }, 'options.extra');
});

test('exactly one of cron and everyMs', () => {
  rejects({ name: 'x' }, 'options.cron');
  rejects({ name: 'x', cron: '* * * * *', everyMs: 1000 }, 'options.everyMs');
  rejects({ name: 'x', cron: '' }, 'options.cron');
  rejects({ name: 'x', cron: '* * * *' }, 'options.cron');
  rejects({ name: 'x', cron: '* * * * * * *' }, 'options.cron');
  rejects({ name: 'x', cron: '61 * * * *' }, 'options.cron');
  rejects({ name: 'x', cron: '0 0 30 2 *' }, 'options.cron');
  rejects({ name: 'x', everyMs: 999 }, 'options.everyMs');
  rejects({ name: 'x', everyMs: 1000.5 }, 'options.everyMs');
  rejects({ name: 'x', everyMs: '1000' }, 'options.everyMs');
  rejects({ name: 'x', everyMs: Infinity }, 'options.everyMs');
});

test('timeZone, catchUp, catchUpWindowMs, overlap, maxAttempts', () => {
  rejects({ name: 'x', cron: '* * * * *', timeZone: 'Mars/Olympus' }, 'options.timeZone');
  rejects({ name: 'x', cron: '* * * * *', timeZone: '+01:00' }, 'options.timeZone');
  rejects({ name: 'x', cron: '* * * * *', timeZone: 1 }, 'options.timeZone');
  rejects({ name: 'x', everyMs: 1000, timeZone: 'UTC' }, 'options.timeZone');
  rejects({ name: 'x', everyMs: 1000, catchUp: 'some' }, 'options.catchUp');
  rejects({ name: 'x', everyMs: 1000, catchUpWindowMs: -1 }, 'options.catchUpWindowMs');
  // Shorter than a slot's dispatch: every slot that came due on time would be recorded missed.
  rejects({ name: 'x', everyMs: 1000, catchUpWindowMs: 0 }, 'options.catchUpWindowMs');
  rejects({ name: 'x', everyMs: 1000, catchUpWindowMs: 999 }, 'options.catchUpWindowMs');
  rejects({ name: 'x', everyMs: 1000, catchUpWindowMs: 1.5 }, 'options.catchUpWindowMs');
  rejects({ name: 'x', everyMs: 1000, overlap: 'queue' }, 'options.overlap');
  rejects({ name: 'x', everyMs: 1000, maxAttempts: 0 }, 'options.maxAttempts');
  rejects({ name: 'x', everyMs: 1000, maxAttempts: 2.5 }, 'options.maxAttempts');
});
