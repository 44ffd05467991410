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
