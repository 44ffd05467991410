import { Command } from 'commander';
import { CANDIDATE_TABLE, LEADER_TABLE } from '../election/schema';
import { connect, disconnect, redact, resolveUrl } from './target';

async function init(options: { url?: string }): Promise<void> {
  const url = resolveUrl(options.url);
  const dataSource = await connect(url, { createTables: true });
  await disconnect(dataSource);
  process.stdout.write(`election tables ready in ${redact(url)}: ${CANDIDATE_TABLE}, ${LEADER_TABLE}\n`);
}

/** `gemstone-election init`: `initDb` with table creation. */
export function initCommand(): Command {
  return new Command('init')
    .description('create the election tables if they are missing (initDb); safe to run again')
    .option('-u, --url <url>', 'database URL (default: $GEMSTONE_DB_URL, else sqlite:gemstone.sqlite)')
    .action((options: { url?: string }) => init(options));
}
