import { isPortFree } from '../../ops/dev/ports';

/**
 * Ports for the servers tests start. `listen(0)` hands out ports from the
 * kernel's ephemeral range, the same range outgoing connections take theirs
 * from, and two jest workers asking at once may be told the same one; a
 * port read that way and bound a moment later by a child process is then
 * sometimes taken. These come from below that range (32768 and up on
 * Linux), from a block of their own per jest worker (the global setup has
 * block 0), each checked free before it is handed out.
 */
const BASE = 20_000;
const BLOCK = 1_500;
const BLOCKS = 8;

const block = Number(process.env.JEST_WORKER_ID ?? '0') % BLOCKS;
// Each test file loads this module afresh: start somewhere else in the block than the file before.
let next = Math.floor(Math.random() * BLOCK);

export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let tries = 0; tries < BLOCK; tries++) {
    const port = BASE + block * BLOCK + (next++ % BLOCK);
    if (await isPortFree(port, host)) return port;
  }
  throw new Error(`no free port in ${BASE + block * BLOCK}..${BASE + (block + 1) * BLOCK - 1} on ${host}`);
}
