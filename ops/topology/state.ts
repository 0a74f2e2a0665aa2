import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { AirlockError } from '../../core/util/errors';
import { healthCheckSchema } from './health';

/** The topology's state file is unreadable or of another version. */
export class TopologyStateError extends AirlockError {
  override name = 'TopologyStateError';
}

export const topologyPartSchema = z.object({
  /** `postgres`, `temporal`, `ui`, `codec-server`, `inbox`, `agent-1`, … */
  name: z.string(),
  pid: z.number().int().positive(),
  startTime: z.string().nullable(),
  /** PostgreSQL shuts down fast on SIGINT (SIGTERM waits for every client to leave). */
  stopSignal: z.enum(['SIGTERM', 'SIGINT']),
  health: healthCheckSchema,
  log: z.string(),
});
export type TopologyPart = z.infer<typeof topologyPartSchema>;

export const topologyStateSchema = z.object({
  schemaVersion: z.literal(1),
  basePort: z.number().int(),
  temporalAddress: z.string(),
  webUi: z.string(),
  approvalPage: z.string(),
  /** The PostgreSQL given to `up` (absent: the private one in the folder). */
  databaseUrl: z.string().optional(),
  /** In start order; `down` stops them in reverse. */
  parts: z.array(topologyPartSchema),
});
export type TopologyState = z.infer<typeof topologyStateSchema>;

export function readTopologyState(file: string): TopologyState | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new TopologyStateError(`cannot read ${file}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new TopologyStateError(`${file} is not JSON: stop what it started by hand, then remove it`);
  }
  const parsed = topologyStateSchema.safeParse(json);
  if (!parsed.success) throw new TopologyStateError(`${file} is not a topology state this airlock knows (schemaVersion 1): stop what it started by hand, then remove it`);
  return parsed.data;
}

/** Written whole (0600: the health checks hold the database password), so a reader never sees half of it. */
export function writeTopologyState(file: string, state: TopologyState): void {
  const scratch = `${file}.${process.pid}`;
  writeFileSync(scratch, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  renameSync(scratch, file);
}
