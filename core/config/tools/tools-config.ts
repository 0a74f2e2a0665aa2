import { z } from 'zod';
import type { Availability } from '../../tools/tool-host';
import { commandsConfigSchema } from './commands';
import { hostsConfigSchema } from './hosts';
import { servicesConfigSchema } from './services';

/**
 * The tools config file (AIRLOCK_TOOLS_CONFIG): everything the tools may
 * touch, in one place. What is not listed does not exist for the tools,
 * and a tool that needs something not listed is not offered to the model.
 */
export const toolsConfigSchema = z.strictObject({
  version: z.literal(1, 'expected version: 1'),
  /** Folders the file tools may touch (instead of AIRLOCK_ROOTS). */
  roots: z.array(z.string().startsWith('/', 'expected an absolute folder, e.g. /srv/share')).min(1, 'list at least one folder, or leave roots out').optional(),
  services: servicesConfigSchema.optional(),
  hosts: hostsConfigSchema.optional(),
  commands: commandsConfigSchema.optional(),
});
export type ToolsConfig = z.output<typeof toolsConfigSchema>;

/** Which capabilities a tools config grants: files always (the roots default to a sandbox folder), the rest when listed. */
export function availabilityOf(config: ToolsConfig | undefined): Availability {
  return {
    files: true,
    services: Object.keys(config?.services ?? {}).length > 0,
    http: (config?.hosts?.allow.length ?? 0) + (config?.hosts?.allowInternal.length ?? 0) > 0,
    commands: Object.keys(config?.commands ?? {}).length > 0,
  };
}
