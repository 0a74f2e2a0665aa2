import { z } from 'zod';
import { isSecretField } from '../../redaction/masking';
import { isLauncher, wrapsSafely } from '../../tools/commands/launchers';

/** Why an entry whose program runs other programs is refused. */
export function launcherMessage(name: string): string {
  return `${name} runs whatever program its arguments name (a wrapper, shell or interpreter); name the one program it may run (wraps: { program: /usr/local/bin/backup-share, wrapperArgs: [...] }) or list that program itself`;
}

/**
 * `commands:` in the tools config: the programs `command_run` may start,
 * by the name the model uses as argv[0], each with its absolute path and
 * how it runs. Nothing else runs; nothing is looked up in PATH.
 */

export const commandNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.+-]{0,62}$/, 'expected a command name of letters, digits, ".", "_", "+" or "-", e.g. backup');

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name');

/** PATH of a command unless its `env` sets one. */
export const DEFAULT_COMMAND_PATH = '/usr/local/bin:/usr/bin:/bin';

const programPath = z
  .string()
  .refine((p) => p.startsWith('/') && !p.includes('\0') && !p.split('/').includes('..'), 'expected the program\'s absolute path, e.g. /usr/local/bin/backup (no "..")');

const baseName = (path: string) => path.slice(path.lastIndexOf('/') + 1);

export const commandConfigSchema = z
  .strictObject({
    /** The program, absolute. */
    path: programPath,
    /**
     * For a program that runs other programs (`timeout`, `env`, `nice`, a
     * shell, an interpreter): the one program it may run, and the fixed
     * arguments of the wrapper before it. A call's arguments follow the
     * wrapped program: `[path, ...wrapperArgs, program, ...call arguments]`.
     */
    wraps: z
      .strictObject({
        program: programPath,
        wrapperArgs: z.array(z.string().refine((a) => !a.includes('\0'), 'must not contain NUL')).max(64).default([]),
      })
      .optional(),
    /** Per call, when the call names none. */
    timeoutSeconds: z.number().positive().max(86_400).default(60),
    /** The most a call may ask for; default: timeoutSeconds. */
    maxTimeoutSeconds: z.number().positive().max(86_400).optional(),
    /** Between SIGTERM and SIGKILL of the command's process group. */
    killGraceSeconds: z.number().min(0).max(60).default(2),
    /** Kept of stdout and of stderr each; the rest is counted and dropped. */
    maxOutputBytes: z.number().int().min(1).max(16 * 1024 * 1024).default(64 * 1024),
    /**
     * The whole environment of the command besides PATH, HOME and LANG
     * (which get defaults unless set here): nothing of the worker's is
     * passed on, and secret-looking names are refused.
     */
    env: z.record(envName, z.string().refine((v) => !v.includes('\0'), 'must not contain NUL')).default({}),
  })
  .superRefine((c, ctx) => {
    // Judged by what runs: a wrapper, shell or interpreter must say what it may run (the tools worker checks the real files again).
    if (c.wraps === undefined && isLauncher(baseName(c.path))) {
      ctx.addIssue({ code: 'custom', path: ['path'], message: launcherMessage(baseName(c.path)) });
    }
    if (c.wraps !== undefined && isLauncher(baseName(c.path)) && !wrapsSafely(baseName(c.path))) {
      ctx.addIssue({
        code: 'custom',
        path: ['wraps'],
        message: `${baseName(c.path)} reads its arguments as a command line or as code, so no program it wraps keeps the call's arguments from being run; wrap the program in a script with fixed options instead`,
      });
    }
    if (c.wraps !== undefined && isLauncher(baseName(c.wraps.program))) {
      ctx.addIssue({ code: 'custom', path: ['wraps', 'program'], message: `${baseName(c.wraps.program)} runs other programs too; wrap the program that does the work` });
    }
    for (const [key, value] of Object.entries(c.env)) {
      if (isSecretField(key, value)) {
        ctx.addIssue({ code: 'custom', path: ['env', key], message: `${key} looks like a secret; commands get no secrets through the config, let the program read them from a file` });
      }
    }
    if (c.maxTimeoutSeconds !== undefined && c.timeoutSeconds > c.maxTimeoutSeconds) {
      ctx.addIssue({ code: 'custom', path: ['timeoutSeconds'], message: `timeoutSeconds (${c.timeoutSeconds}) is above maxTimeoutSeconds (${c.maxTimeoutSeconds})` });
    }
  })
  .transform((c) => ({ ...c, maxTimeoutSeconds: c.maxTimeoutSeconds ?? c.timeoutSeconds }));
export type CommandConfig = z.output<typeof commandConfigSchema>;

export const commandsConfigSchema = z.record(commandNameSchema, commandConfigSchema, {
  error: (issue) => (issue.code === 'invalid_key' ? `${JSON.stringify(issue.input)}: expected a command name of letters, digits, ".", "_", "+" or "-", e.g. backup` : undefined),
});
export type CommandsConfig = z.output<typeof commandsConfigSchema>;

/** One allowed command: its name and its settings. */
export type CommandEntry = CommandConfig & { readonly name: string };

export function commandEntries(config: CommandsConfig): CommandEntry[] {
  return Object.entries(config).map(([name, c]) => ({ name, ...c }));
}
