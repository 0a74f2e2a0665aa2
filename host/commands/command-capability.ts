import { z } from 'zod';
import { maskString } from '../../core/redaction/masking';
import type { SubjectState } from '../../core/tools/observed-state';
import type { CommandCapability } from '../../core/tools/capabilities/commands';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import type { ProgramFile, ResolvedCommand } from './command-allowlist';
import type { CommandsConfig } from '../../core/config/tools/commands';
import type { Roots } from '../fs/roots';
import { CommandEngine, formatCommandResult } from './command-engine';

/** The program as `observe` recorded it, read back from a state carried since (approval, nonce store). */
/** A list of names in a flat fact: JSON (a file name may hold any character but "/" and NUL). */
const namesFact = z
  .string()
  .transform((text, ctx) => {
    try {
      return z.array(z.string()).parse(JSON.parse(text));
    } catch {
      ctx.addIssue({ code: 'custom', message: 'names are not a JSON list' });
      return z.NEVER;
    }
  })
  .optional();

/** The program as `observe` recorded it, read back from a state carried since (approval, nonce store); flat, as subject facts are. */
const programFacts = z.object({
  configured: z.string(),
  path: z.string(),
  dev: z.number(),
  ino: z.number(),
  size: z.number(),
  mtimeMs: z.number(),
  mode: z.string(),
  /** Absent in states recorded before names were: the file's own name then. */
  names: namesFact,
  wrappedPath: z.string().optional(),
  wrappedDev: z.number().optional(),
  wrappedIno: z.number().optional(),
  wrappedSize: z.number().optional(),
  wrappedMtimeMs: z.number().optional(),
  wrappedMode: z.string().optional(),
  wrappedNames: namesFact,
});

function fileText(file: ProgramFile): string {
  return `${file.path} (inode ${file.ino} on device ${file.dev}, ${file.size} bytes, mode ${file.mode}, modified ${new Date(file.mtimeMs).toISOString()})`;
}

const ownName = (path: string) => [path.slice(path.lastIndexOf('/') + 1)];

function stateOf(command: ResolvedCommand): SubjectState {
  const w = command.wrapped;
  return {
    kind: 'subject',
    subject: command.name,
    exists: true,
    identity: w === undefined ? `${command.dev}:${command.ino}` : `${command.dev}:${command.ino}>${w.dev}:${w.ino}`,
    summary: `${command.name} runs ${fileText(command)}${w === undefined ? '' : `, which runs ${fileText(w)}`}`,
    facts: {
      configured: command.configured,
      path: command.path,
      dev: command.dev,
      ino: command.ino,
      size: command.size,
      mtimeMs: command.mtimeMs,
      mode: command.mode,
      names: JSON.stringify(command.names),
      ...(w === undefined
        ? {}
        : { wrappedPath: w.path, wrappedDev: w.dev, wrappedIno: w.ino, wrappedSize: w.size, wrappedMtimeMs: w.mtimeMs, wrappedMode: w.mode, wrappedNames: JSON.stringify(w.names) }),
    },
  };
}

function expectedFrom(state: SubjectState): ResolvedCommand {
  if (!state.exists) throw new ToolRefusal(`${state.subject} could not be checked before: ${state.summary}`);
  const parsed = programFacts.safeParse(state.facts);
  if (!parsed.success) throw new ToolRefusal(`what was checked of ${state.subject} is unreadable; ask again`);
  const f = parsed.data;
  const command: ResolvedCommand = {
    name: state.subject,
    configured: f.configured,
    path: f.path,
    dev: f.dev,
    ino: f.ino,
    size: f.size,
    mtimeMs: f.mtimeMs,
    mode: f.mode,
    names: f.names ?? ownName(f.path),
  };
  const { wrappedPath: path, wrappedDev: dev, wrappedIno: ino, wrappedSize: size, wrappedMtimeMs: mtimeMs, wrappedMode: mode } = f;
  if (path === undefined || dev === undefined || ino === undefined || size === undefined || mtimeMs === undefined || mode === undefined) return command;
  return { ...command, wrapped: { path, dev, ino, size, mtimeMs, mode, names: f.wrappedNames ?? ownName(path) } };
}

/** The `commands` capability the tools worker lends `command_run`, on an engine built from the tools config's `commands`. */
export function createCommandCapability(engine: CommandEngine): CommandCapability {
  return {
    names: engine.allowlist.names(),

    async observe(argv0) {
      try {
        return stateOf(await engine.allowlist.resolve(argv0));
      } catch (err) {
        if (err instanceof ToolRefusal) return { kind: 'subject', subject: argv0, exists: false, identity: null, summary: err.message, facts: {} };
        throw err;
      }
    },

    async run(spec, expected) {
      const timeoutMs = engine.timeoutMs(spec);
      const result = await engine.run(spec, expected === undefined ? undefined : expectedFrom(expected));
      // Output goes to the model and to logs: whatever looks like a secret is masked.
      return { ok: result.exitCode === 0 && !result.timedOut, output: maskString(formatCommandResult(result, timeoutMs)) };
    },
  };
}

/** The capability for a tools config's `commands` section, running in folders inside `roots`. */
export function commandCapabilityFor(commands: CommandsConfig, roots: Roots, home: string | undefined = process.env.HOME): CommandCapability {
  return createCommandCapability(new CommandEngine({ commands, roots, home }));
}
