#!/usr/bin/env node
/**
 * The `gemstone-election` executable. Errors end as one line on stderr and exit code 1.
 */
// The database folders register their dialects (see src/databases/registry.ts).
import '../databases';
import 'reflect-metadata';
import '../election'; // registers the election tables on GemstoneDB
import pc from 'picocolors';
import { createProgram } from './program';
import { CliError, oneLine } from './errors';

const { version } = require('../../../package.json') as { version: string };

async function main(argv: readonly string[]): Promise<void> {
  await createProgram(version).parseAsync([...argv]);
}

main(process.argv).then(
  () => {
    // Pools and timers of a finished command must not keep the process alive.
    process.exit(process.exitCode ?? 0);
  },
  (error: unknown) => {
    const prefix = error instanceof CliError ? '' : `${error instanceof Error ? error.name : 'error'}: `;
    process.stderr.write(`${pc.red('gemstone-election:')} ${prefix}${oneLine(error)}\n`);
    process.exit(1);
  },
);
