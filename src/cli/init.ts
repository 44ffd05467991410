import { Command } from 'commander';
import { CANDIDATE_TABLE, HISTORY_TABLE, LEADER_TABLE, RUN_TABLE } from '../election/schema';
import { contextOf } from '../db/context';
import { connect, disconnect, fallbackNote, redact, resolveUrl, withTableOptions } from './target';
import { URL_OPTION_HELP } from './options';

interface InitOptions {
  url?: string;
  schema?: string;
  entityPrefix?: string;
}

async function init(options: InitOptions): Promise<void> {
  const url = resolveUrl(options.url);
  const dataSource = await connect(url, { createTables: true, schema: options.schema, entityPrefix: options.entityPrefix });
  const context = contextOf(dataSource);
  const names = [CANDIDATE_TABLE, LEADER_TABLE, HISTORY_TABLE, RUN_TABLE].map((name) => {
    const schema = context.schemaName(name);
    return `${schema === undefined ? '' : `${schema}.`}${context.tableName(name)}`;
  });
  await disconnect(dataSource);
  process.stdout.write(`election tables ready in ${redact(url)}: ${names.join(', ')}\n`);
  const note = fallbackNote(url);
  if (note !== undefined) process.stderr.write(`gemstone-election: ${note}\n`);
}

/** `gemstone-election init`: `initDb` with table creation. */
export function initCommand(): Command {
  return withTableOptions(
    new Command('init')
      .description('create the election tables if they are missing (initDb); safe to run again')
      .option('-u, --url <url>', URL_OPTION_HELP),
  ).action((options: InitOptions) => init(options));
}
