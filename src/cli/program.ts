import { Command } from 'commander';
import { dashboardCommand } from './dashboard/command';
import { demoCommand } from './demo/command';
import { initCommand } from './init';
import { statusCommand } from './status/command';
import { watchCommand } from './watch/command';
import { historyCommand } from './history/command';
import { runsCommand } from './runs/command';

/** The `gemstone-election` command line: `status`, `watch`, `history`, `runs`, `dashboard`, `init`, `demo`. */
export function createProgram(version: string, extra: readonly Command[] = []): Command {
  const program = new Command('gemstone-election')
    .description('Leader election on the SQL database you already run: inspect it, set it up, watch it fail over.')
    .version(version)
    .showHelpAfterError('(run with --help for usage)');
  program.addCommand(statusCommand());
  program.addCommand(watchCommand());
  program.addCommand(historyCommand());
  program.addCommand(runsCommand());
  program.addCommand(dashboardCommand());
  program.addCommand(initCommand());
  program.addCommand(demoCommand());
  for (const command of extra) program.addCommand(command);
  return program;
}
