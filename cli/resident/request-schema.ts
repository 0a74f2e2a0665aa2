import { z } from 'zod';
import { RESIDENT_REQUEST_VERSION, type ResidentRequest } from './protocol';

/** A request as the resident process accepts it (protocol.ts). */
export const residentRequestSchema = z.strictObject({
  schemaVersion: z.literal(RESIDENT_REQUEST_VERSION),
  identity: z.string().regex(/^[0-9a-f]{32}$/),
  argv: z.array(z.string()).max(1000),
  env: z.record(z.string(), z.string()),
  cwd: z.string().startsWith('/'),
  umask: z.number().int().min(0).max(0o777),
  script: z.string().nullable(),
}) satisfies z.ZodType<ResidentRequest>;
