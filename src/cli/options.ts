import { InvalidArgumentError } from 'commander';
import { checkNs } from '../election/validate';

/** `--ns`: a namespace the library accepts, else commander's usage error. */
export function namespace(value: string): string {
  try {
    return checkNs(value, '--ns');
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/** The help of `--url`: where the URL comes from when the option is not given (see `resolveUrl`). */
export const URL_OPTION_HELP = 'database URL (default: $GEMSTONE_DB_URL, else $DATABASE_URL, else sqlite:gemstone.sqlite)';
