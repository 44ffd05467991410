import { Command } from 'commander';
import { demoCommand } from './demo/command';
import { initCommand } from './init';
import { statusCommand } from './status/command';

/** The `gemstone-election` command line: `status`, `init`, `demo`. */
export function createProgram(version: string, extra: readonly Command[] = []): Command {
  const program = new Command('gemstone-election')
    .description('Leader election on the SQL database you already run: inspect it, set it up, watch it fail over.')
    .version(version)
    .showHelpAfterError('(run with --help for usage)');
  program.addCommand(statusCommand());
  program.addCommand(initCommand());
  program.addCommand(demoCommand());
  for (const command of extra) program.addCommand(command);
  return program;
}
