import { cardText } from '../../core/reviewer/approval-card';
import { display } from '../../core/redaction/display-text';
import { parseDuration } from '../../core/util/duration';
import { pendingCards, pendingTable } from '../../core/reviewer/pending-table';
import { encodePageToken } from '../../client/page-token';
import type { AirlockClient, PendingJob } from '../../client/airlock-client';
import { cliName } from '../../client/cli-name';
import { printJson, stringOption, type CommandIo, type CommandRun, type ParsedArgs } from '../command';
import { UsageError } from '../../client/errors';
import { withClient } from '../with-client';
import { pendingListing, type PendingListing } from './pending-options';

const DEFAULT_INTERVAL_MS = 5_000;
const MIN_INTERVAL_MS = 1_000;

function intervalOf(args: ParsedArgs): number {
  const raw = stringOption(args, 'interval');
  if (raw === undefined) return DEFAULT_INTERVAL_MS;
  const ms = parseDuration(raw);
  if (ms === undefined || ms < MIN_INTERVAL_MS) throw new UsageError(`--interval takes a duration of at least 1s (like 5s or 1m), got ${JSON.stringify(raw)}`);
  return ms;
}

/** The jobs one listing shows and, for a page with more after it, the token of the next page. */
async function listed(client: AirlockClient, listing: PendingListing): Promise<{ jobs: PendingJob[]; next: string | null }> {
  if (listing.kind === 'all') return { jobs: await client.listPending({ pageSize: listing.pageSize }), next: null };
  const page = await client.pendingPage({ pageSize: listing.pageSize, ...(listing.token !== undefined ? { token: listing.token } : {}) });
  return { jobs: page.jobs, next: page.next === null ? null : encodePageToken(page.next) };
}

/** The last line of a page with more after it: how to see every job, or the next page. */
function moreLine(shown: number, next: string, listing: PendingListing, cli: string): string {
  const limit = listing.kind === 'page' && listing.limitGiven ? ` --limit ${listing.pageSize}` : '';
  return `${shown} ${shown === 1 ? 'job' : 'jobs'} shown, more are waiting: ${cli} pending --all for every one, or ${cli} pending${limit} --page ${next} for the next ${listing.pageSize}`;
}

interface Listed {
  readonly client: AirlockClient;
  readonly args: ParsedArgs;
  readonly io: CommandIo;
  readonly listing: PendingListing;
}

/** One listing: the table, every card, or JSON with the cards added. */
async function printOnce({ client, args, io, listing }: Listed): Promise<void> {
  const { jobs, next } = await listed(client, listing);
  const cli = cliName(io.env);
  const cards = pendingCards(jobs, { now: Date.now(), cli });
  if (args.values.json === true) {
    const withCards = jobs.map((job) => ({ ...job, cards: cards.filter((c) => c.jobId === job.jobId) }));
    // Every page: the bare array scripts already read. One page: the token goes with it, so an object.
    printJson(io, listing.kind === 'all' ? withCards : { jobs: withCards, nextPageToken: next });
    return;
  }
  const more = next === null ? [] : [moreLine(jobs.length, next, listing, cli)];
  if (args.values.card !== true || jobs.length === 0) {
    for (const line of [...pendingTable(cards, cli), ...more]) io.out(line);
    return;
  }
  for (const job of jobs) {
    io.out(display`job ${job.jobId}: ${job.goal}`);
    for (const card of cards.filter((c) => c.jobId === job.jobId)) for (const line of cardText(card)) io.out(line);
  }
  io.out(`${cards.length} request(s) waiting in ${jobs.length} job(s)`);
  for (const line of more) io.out(line);
}

/** Resolves when the user presses Ctrl-C (or the process is asked to stop), or after `ms`. */
function sleepOrStop(ms: number, stop: Promise<void>): Promise<'tick' | 'stop'> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    new Promise<'tick'>((resolve) => {
      timer = setTimeout(() => resolve('tick'), ms);
    }),
    stop.then(() => 'stop' as const),
  ]).finally(() => clearTimeout(timer));
}

/** Lists again every interval until Ctrl-C; on a terminal each listing replaces the last. */
async function watch(what: Listed & { readonly intervalMs: number }): Promise<void> {
  const { args, io, intervalMs } = what;
  let onStop: () => void = () => undefined;
  const stop = new Promise<void>((resolve) => {
    onStop = resolve;
  });
  process.once('SIGINT', onStop);
  process.once('SIGTERM', onStop);
  const tty = process.stdout.isTTY === true && args.values.json !== true;
  try {
    for (;;) {
      // Written directly: `io.out` shows control characters escaped, and this one is ours.
      if (tty) process.stdout.write('\x1b[H\x1b[2J');
      else io.out(`--- ${new Date().toISOString()} ---`);
      await printOnce(what);
      if (tty) io.out(`\nrefreshing every ${intervalMs / 1000}s; Ctrl-C to stop`);
      if ((await sleepOrStop(intervalMs, stop)) === 'stop') return;
    }
  } finally {
    process.removeListener('SIGINT', onStop);
    process.removeListener('SIGTERM', onStop);
  }
}

export const run: CommandRun = async (args, io, command) => {
  if (args.positionals.length > 0) throw new UsageError(`pending takes no arguments; usage: ${command.usage}`);
  if (args.values.watch !== true && args.values.interval !== undefined) throw new UsageError('--interval goes with --watch');
  const intervalMs = intervalOf(args);
  const listing = pendingListing(args);
  await withClient(io, (client) => (args.values.watch === true ? watch({ client, args, io, listing, intervalMs }) : printOnce({ client, args, io, listing })));
};
