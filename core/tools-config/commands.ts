import { z } from 'zod';

/**
 * `commands:` in the tools config: the programs `command_run` may start,
 * by the name the model uses as argv[0], each with its absolute path.
 */

export const commandNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.+-]{0,62}$/, 'expected a command name of letters, digits, ".", "_", "+" or "-", e.g. backup');

export const commandConfigSchema = z.strictObject({
  /** The program, absolute: nothing is looked up in PATH. */
  path: z.string().startsWith('/', 'expected the program\'s absolute path, e.g. /usr/local/bin/backup'),
});
export type CommandConfig = z.output<typeof commandConfigSchema>;

export const commandsConfigSchema = z.record(commandNameSchema, commandConfigSchema);
export type CommandsConfig = z.output<typeof commandsConfigSchema>;
