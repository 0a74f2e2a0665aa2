import { z } from 'zod';
import { maskString } from '../../core/redaction/masking';
import type { SubjectState } from '../../core/tools/observed-state';
import type { CommandCapability } from '../../core/tools/capabilities/commands';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import type { ResolvedCommand } from './command-allowlist';
import type { CommandsConfig } from '../../core/config/tools/commands';
import type { Roots } from '../roots';
import { CommandEngine, formatCommandResult } from './command-engine';

/** The program as `observe` recorded it, read back from a state carried since (approval, nonce store). */
const programFacts = z.object({
  configured: z.string(),
  path: z.string(),
  dev: z.number(),
  ino: z.number(),
  size: z.number(),
  mtimeMs: z.number(),
  mode: z.string(),
});

function stateOf(command: ResolvedCommand): SubjectState {
  return {
    kind: 'subject',
    subject: command.name,
    exists: true,
    identity: `${command.dev}:${command.ino}`,
    summary: `${command.name} runs ${command.path} (inode ${command.ino} on device ${command.dev}, ${command.size} bytes, mode ${command.mode}, modified ${new Date(command.mtimeMs).toISOString()})`,
    facts: { configured: command.configured, path: command.path, dev: command.dev, ino: command.ino, size: command.size, mtimeMs: command.mtimeMs, mode: command.mode },
  };
}

function expectedFrom(state: SubjectState): ResolvedCommand {
  if (!state.exists) throw new ToolRefusal(`${state.subject} could not be checked before: ${state.summary}`);
  const facts = programFacts.safeParse(state.facts);
  if (!facts.success) throw new ToolRefusal(`what was checked of ${state.subject} is unreadable; ask again`);
  return { name: state.subject, ...facts.data };
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
