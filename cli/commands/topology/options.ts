import { join, resolve } from 'node:path';
import type { CommandIo, ParsedArgs } from '../../command';
import { UsageError } from '../../../client/errors';
import { DEFAULT_BASE_PORT, MAX_BASE_PORT } from '../../../ops/topology/layout';

/** `--dir` (default `<data>/topology`): the folder holding everything one topology runs on. */
export function topologyDir(args: ParsedArgs, io: CommandIo): string {
  const given = args.values.dir;
  if (typeof given === 'string') {
    if (given === '') throw new UsageError('--dir takes a folder');
    return resolve(given);
  }
  return join(resolve(io.config().dataDir), 'topology');
}

/** `--base-port` (default 7233): the Temporal frontend's port; every other port is derived from it. */
export function basePort(args: ParsedArgs): number {
  const given = args.values['base-port'];
  if (given === undefined) return DEFAULT_BASE_PORT;
  const n = typeof given === 'string' && /^[0-9]+$/.test(given) ? Number(given) : NaN;
  // Temporal keeps its membership ports (base+20…23) in a smallint column: they must stay below 32768.
  if (!Number.isInteger(n) || n < 1024 || n > MAX_BASE_PORT) throw new UsageError(`--base-port takes a port from 1024 to ${MAX_BASE_PORT} (Temporal stores its internal ports as 16-bit signed numbers), got ${JSON.stringify(given)}`);
  return n;
}

export function noPositionals(args: ParsedArgs, usage: string): void {
  if (args.positionals.length > 0) throw new UsageError(`unexpected ${JSON.stringify(args.positionals[0])}; usage: ${usage}`);
}
