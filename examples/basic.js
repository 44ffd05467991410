// `npm run example`: three candidates on the embedded SQLite default (./gemstone.sqlite, or the
// database of GEMSTONE_DB_URL, else DATABASE_URL): an election, a takeover after the leader stops
// heartbeating, and a fast handover when the new leader unregisters. One process: the embedded
// default is right here. An application passes its URL or DataSource (`initDb(url)`) instead.
const { randomUUID } = require('crypto');
const { initDb, ElectionService } = require('gemstone-utils');

const EXPIRE_SECONDS = 2;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const dataSource = await initDb(); // registers and creates the election tables if missing
  const election = new ElectionService(dataSource, { expireSeconds: EXPIRE_SECONDS });
  const ns = `example-${process.pid}`;
  const names = new Map([randomUUID(), randomUUID(), randomUUID()].map((id, i) => [id, `worker-${'abc'[i]}`]));
  const [a, b, c] = [...names.keys()];
  const who = (id) => names.get(id) ?? id;
  const show = async (title) => {
    const leader = await election.getLeader({ ns });
    const candidates = (await election.listCandidates({ ns })).map(who).join(', ');
    console.log(`${title.padEnd(44)} leader=${leader ? `${who(leader.leaderId)} (term ${leader.term})` : 'none'}  candidates=[${candidates}]`);
  };

  console.log(`database: ${dataSource.options.type} ${dataSource.options.database ?? ''}, lease ${EXPIRE_SECONDS}s, namespace ${ns}\n`);
  for (const id of names.keys()) await election.registerCandidate(id, { ns });
  for (const id of names.keys()) console.log(`${who(id)} elects -> leader is ${who(await election.elect(id, { ns }))}`);
  await show('\nafter the first round:');

  console.log(`\n${who(a)} stops heartbeating; the others keep electing...`);
  const started = Date.now();
  let leader = a;
  while (leader === a) {
    await sleep(250);
    for (const id of [b, c]) leader = await election.elect(id, { ns });
  }
  await show(`takeover by ${who(leader)} after ${((Date.now() - started) / 1000).toFixed(1)}s:`);

  console.log(`\n${who(leader)} unregisters (shutdown): the lease is vacated at once`);
  await election.unregisterCandidate(leader, { ns });
  await show('after unregister:');
  const other = leader === b ? c : b;
  console.log(`${who(other)} elects -> leader is ${who(await election.elect(other, { ns }))}`);
  await show('handover without waiting for expiry:');

  for (const id of names.keys()) await election.unregisterCandidate(id, { ns });
  await dataSource.destroy();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
