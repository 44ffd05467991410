import type { DataSource } from 'typeorm';

/**
 * @internal How the session helpers (`session.ts`) explain a failure: set by `explain-error.ts`
 * when it loads. A hook rather than an import: `explain-error.ts` names databases through the URL
 * targets, whose folders import `session.ts` (an import circle otherwise).
 */
type Explain = (dataSource: DataSource, error: unknown) => unknown;
type Check = (dataSource: DataSource) => void;

let explainer: Explain = (_dataSource, error) => error;
let checker: Check = () => undefined;

/** @internal Set once by `explain-error.ts`. */
export function setExplainer(explain: Explain, check: Check): void {
  explainer = explain;
  checker = check;
}

/** Runs `work` after the DataSource check; a failure leaves as the explainer says. */
export async function explainedRun<T>(dataSource: DataSource, work: () => Promise<T>): Promise<T> {
  try {
    checker(dataSource);
    return await work();
  } catch (error) {
    throw explainer(dataSource, error);
  }
}
