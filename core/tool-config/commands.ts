import { z } from 'zod';
import { isSecretField } from '../masking';

/**
 * The `commands` section of the tools config: the programs `command_run`
 * may start, and how. A command is named by its entry's `name` (default:
 * the file's base name) or by its path; nothing else runs.
 */

const absolutePath = z
  .string()
  .refine((p) => p.startsWith('/') && !p.includes('\0') && !p.split('/').includes('..'), 'expected an absolute path such as "/usr/bin/du" (no "..")');

const commandName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/, 'expected a plain command name such as "du" or "backup-photos"');

const baseName = (path: string) => path.slice(path.lastIndexOf('/') + 1);

/** An absolute path, or `{ path, name }` to call it by another name. */
const entry = z.preprocess(
  (v) => (typeof v === 'string' ? { path: v } : v),
  z.strictObject({ path: absolutePath, name: commandName.optional() }).transform((e) => ({ path: e.path, name: e.name ?? baseName(e.path) })),
);

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name');

export const DEFAULT_COMMAND_PATH = '/usr/local/bin:/usr/bin:/bin';

export const commandsConfigSchema = z
  .strictObject({
    allow: z.array(entry).max(500).default([]),
    /** Per call, when the call names none. */
    timeoutSeconds: z.number().positive().max(86_400).default(60),
    /** The most a call may ask for. */
    maxTimeoutSeconds: z.number().positive().max(86_400).default(600),
    /** Between SIGTERM and SIGKILL of the command's process group. */
    killGraceSeconds: z.number().min(0).max(60).default(2),
    /** Kept of stdout and of stderr each; the rest is counted and dropped. */
    maxOutputBytes: z.number().int().min(1).max(16 * 1024 * 1024).default(64 * 1024),
    /**
     * The whole environment of a command: nothing of the worker's is passed
     * on. PATH, HOME and LANG get defaults when not set here.
     */
    env: z
      .record(envName, z.string().refine((v) => !v.includes('\0'), 'must not contain NUL'))
      .default({})
      .superRefine((env, ctx) => {
        for (const [key, value] of Object.entries(env)) {
          if (isSecretField(key, value)) {
            ctx.addIssue({ code: 'custom', path: [key], message: `${key} looks like a secret; commands get no secrets through the config, let the program read them from a file` });
          }
        }
      }),
  })
  .superRefine((section, ctx) => {
    const seen = new Map<string, number>();
    section.allow.forEach((e, i) => {
      const first = seen.get(e.name);
      if (first !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['allow', i], message: `command name "${e.name}" is also allow[${first}]; give one of them another "name"` });
      } else seen.set(e.name, i);
    });
    if (section.timeoutSeconds > section.maxTimeoutSeconds) {
      ctx.addIssue({ code: 'custom', path: ['timeoutSeconds'], message: `timeoutSeconds (${section.timeoutSeconds}) is above maxTimeoutSeconds (${section.maxTimeoutSeconds})` });
    }
  })
  .default({ allow: [], timeoutSeconds: 60, maxTimeoutSeconds: 600, killGraceSeconds: 2, maxOutputBytes: 64 * 1024, env: {} });

export type CommandsConfig = z.output<typeof commandsConfigSchema>;
export type CommandEntry = CommandsConfig['allow'][number];
