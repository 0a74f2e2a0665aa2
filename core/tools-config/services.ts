import { z } from 'zod';

/**
 * `services:` in the tools config: each service the service tools may
 * touch, by the name the model uses, with the adapter that reaches it.
 * Only these names exist for the tools; anything else is refused.
 */

const absolutePath = z.string().startsWith('/', 'expected an absolute path, e.g. /run/airlock/jellyfin.pid');

export const serviceNameSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_.-]{0,62}$/, 'expected a service name of lowercase letters, digits, ".", "_" or "-", e.g. jellyfin');

export const dockerServiceSchema = z.strictObject({
  adapter: z.literal('docker'),
  /** The container's name (or id) as Docker knows it; the tools pin its id at prepare. */
  container: z.string().min(1, 'expected the container name, e.g. jellyfin'),
  /** The Engine API's unix socket. */
  socket: absolutePath.default('/var/run/docker.sock'),
});

export const systemdServiceSchema = z.strictObject({
  adapter: z.literal('systemd'),
  unit: z.string().regex(/^[A-Za-z0-9@._:-]+\.service$/, 'expected a unit name ending in .service, e.g. smbd.service'),
});

export const processServiceSchema = z.strictObject({
  adapter: z.literal('process'),
  /** argv of the service's command, never a shell string. */
  command: z.array(z.string().min(1)).min(1, 'expected the command as a list: [/usr/bin/program, --flag]'),
  /** Where the running process's pid is kept. */
  pidFile: absolutePath,
});

export const serviceConfigSchema = z.discriminatedUnion('adapter', [dockerServiceSchema, systemdServiceSchema, processServiceSchema], {
  error: 'expected adapter: docker, systemd or process',
});
export type ServiceConfig = z.output<typeof serviceConfigSchema>;

export const servicesConfigSchema = z.record(serviceNameSchema, serviceConfigSchema);
export type ServicesConfig = z.output<typeof servicesConfigSchema>;
