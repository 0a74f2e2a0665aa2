import { z } from 'zod';

/**
 * The `services` section of the tools worker's config file: every service
 * the service tools may see or touch, by the name the model uses, with the
 * adapter that reaches it. A service not listed here does not exist for them.
 */

/** What the model and the rules call a service. */
export const serviceNameSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_.-]{0,62}$/, 'expected a service name of lowercase letters, digits, ".", "_" or "-", e.g. jellyfin');

const absolutePath = (what: string) =>
  z
    .string()
    .min(2, `${what} must be an absolute path`)
    .refine((p) => p.startsWith('/'), `${what} must be an absolute path`)
    .refine((p) => !p.includes('\0'), `${what} must not contain NUL`);

const durationMs = (what: string, max: number) =>
  z.number().int(`${what} must be a whole number of milliseconds`).min(0, `${what} must be 0 or more`).max(max, `${what} must be at most ${max}`);

/** Docker's own rule for names, or an id (12-64 hex digits). */
const containerName = z
  .string()
  .regex(/^\/?[a-zA-Z0-9][a-zA-Z0-9_.-]{0,254}$/, 'container must be a Docker container name or id (letters, digits, "_", "." or "-")')
  .transform((v) => v.replace(/^\//, ''));

const dockerService = z.strictObject({
  adapter: z.literal('docker'),
  /** Looked up by name when a call is prepared; from then on the call acts on that container's id only. */
  container: containerName,
  /** Default /var/run/docker.sock. */
  socket: absolutePath('socket').default('/var/run/docker.sock'),
  /** Engine API version, e.g. "1.44"; unset: the version the Engine reports on /_ping. */
  apiVersion: z.string().regex(/^1\.[0-9]{1,3}$/, 'apiVersion is like "1.44"').optional(),
  /** Seconds the Engine waits after SIGTERM before it kills the container on stop/restart. */
  stopTimeoutSeconds: z.number().int().min(0).max(3600).default(10),
});

/**
 * A unit name as systemctl takes it: a type suffix, no leading "-" (it
 * would read as an option), no glob characters (systemctl expands them).
 */
const unitName = z
  .string()
  .regex(
    /^[A-Za-z0-9:_.\\@][A-Za-z0-9:_.\\@-]{0,250}\.(service|socket|target|timer|mount|path|slice|scope)$/,
    'unit must be a systemd unit name such as "smbd.service" (no globs, not starting with "-")',
  );

const systemdService = z.strictObject({
  adapter: z.literal('systemd'),
  /** The one unit this service may act on: together the systemd services form the allowlist. */
  unit: unitName,
  /** Default /usr/bin/systemctl (or /bin/systemctl). */
  systemctl: absolutePath('systemctl').optional(),
  /** How long one systemctl call may take. */
  timeoutMs: durationMs('timeoutMs', 600_000).default(90_000),
});

const healthCheck = z.discriminatedUnion('type', [
  /** The process is alive (the default). */
  z.strictObject({ type: z.literal('pid') }),
  /** Something accepts TCP connections there. */
  z.strictObject({
    type: z.literal('tcp'),
    host: z.string().min(1).default('127.0.0.1'),
    port: z.number().int().min(1).max(65535),
    timeoutMs: durationMs('timeoutMs', 60_000).default(2_000),
  }),
  /** A GET answers with a 2xx or 3xx status. */
  z.strictObject({
    type: z.literal('http'),
    url: z
      .string()
      .refine((v) => URL.canParse(v) && new URL(v).protocol === 'http:', 'url must be an http:// URL, for example http://127.0.0.1:8096/health'),
    timeoutMs: durationMs('timeoutMs', 60_000).default(2_000),
  }),
]);

const processService = z.strictObject({
  adapter: z.literal('process'),
  /** argv: the program (absolute path) and its arguments, never run through a shell. */
  command: z
    .array(z.string().refine((a) => !a.includes('\0'), 'arguments must not contain NUL'))
    .min(1, 'command needs at least the program')
    .refine((argv) => argv[0] !== undefined && argv[0].startsWith('/'), 'command[0] must be the absolute path of the program'),
  /** Where the service's pid is kept: written when airlock starts it, read to find it. */
  pidFile: absolutePath('pidFile'),
  /**
   * How the pid in the pid file is recognised as this service (a stale file
   * may name a pid another program has now): its argv is exactly `command`,
   * or, for programs that rewrite their argv, it runs the program command[0].
   */
  matchBy: z.enum(['argv', 'exe'], { error: 'matchBy must be argv or exe' }).default('argv'),
  /** Working directory of the started process; default "/". */
  cwd: absolutePath('cwd').default('/'),
  /** Its whole environment (the worker's own is never passed on), besides PATH. */
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment names are letters, digits and "_"'), z.string()).default({}),
  /** Where its stdout and stderr go (appended); default: discarded. */
  logFile: absolutePath('logFile').optional(),
  health: healthCheck.default({ type: 'pid' }),
  /** After SIGTERM, how long to wait before SIGKILL. */
  stopGraceMs: durationMs('stopGraceMs', 600_000).default(10_000),
  /** After starting, how long to wait for the health check to pass. */
  startTimeoutMs: durationMs('startTimeoutMs', 600_000).default(15_000),
});

export const serviceConfigSchema = z.discriminatedUnion('adapter', [dockerService, systemdService, processService], {
  error: 'expected adapter: docker, systemd or process',
});

export const servicesConfigSchema = z
  .record(serviceNameSchema, serviceConfigSchema)
  .default({})
  .superRefine((services, ctx) => {
    // Two names for one pid file would let each pin the other's process.
    const seen = new Map<string, string>();
    for (const [name, service] of Object.entries(services)) {
      if (service.adapter !== 'process') continue;
      const other = seen.get(service.pidFile);
      if (other !== undefined) ctx.addIssue({ code: 'custom', path: [name, 'pidFile'], message: `the same pidFile as service ${other}` });
      seen.set(service.pidFile, name);
    }
  });

export type DockerServiceConfig = z.output<typeof dockerService>;
export type SystemdServiceConfig = z.output<typeof systemdService>;
export type ProcessServiceConfig = z.output<typeof processService>;
export type HealthCheckConfig = z.output<typeof healthCheck>;
export type ServiceConfig = z.output<typeof serviceConfigSchema>;
export type ServicesConfig = z.output<typeof servicesConfigSchema>;
/** As written in the file (defaults not yet applied). */
export type ServicesConfigInput = z.input<typeof servicesConfigSchema>;
