/** The fields of a driver error that tell a missing table (TypeORM wraps it as `driverError`). */
export interface DriverErrorFields {
  readonly code?: unknown;
  readonly errno?: unknown;
  readonly message?: unknown;
}

/** The driver's error inside what TypeORM threw (or the error itself), for `isMissingTable`. */
export function driverErrorFields(error: unknown): DriverErrorFields | undefined {
  return ((error as { driverError?: unknown })?.driverError ?? error) as DriverErrorFields | undefined;
}
