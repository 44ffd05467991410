import type { SlotSeries } from '../../dist/src/schedules/slots';

/** The slots of `series` in [from, to), walking forwards. */
export function forwards(series: SlotSeries, from: number, to: number): number[] {
  const slots: number[] = [];
  for (let t = series.next(from - 1); t !== null && t < to; t = series.next(t)) slots.push(t);
  return slots;
}

/** The same walking backwards, returned oldest first. */
export function backwards(series: SlotSeries, from: number, to: number): number[] {
  const slots: number[] = [];
  for (let t = series.previous(to); t !== null && t >= from; t = series.previous(t)) slots.push(t);
  return slots.reverse();
}
