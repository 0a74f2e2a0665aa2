import { z } from 'zod';
import { isFileState, type ObservedState, type SubjectState } from '../observed-state';
import { pathArg } from '../fs/file-targets';
import { defineTool } from '../tool-module';

const nameList = z.array(z.string());

function namesIn(value: unknown): string[] {
  if (typeof value !== 'string') return [];
  try {
    const parsed = nameList.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}

/** Every name of the files a command's observed state says will run: the program's and the wrapped program's. */
function programNames(state: ObservedState): string[] {
  if (isFileState(state) || state.kind !== 'subject' || !state.exists) return [];
  return [...namesIn(state.facts.names), ...namesIn(state.facts.wrappedNames)];
}

function subjectAt(states: readonly ObservedState[] | undefined, i: number): SubjectState | undefined {
  const state = states?.[i];
  return state !== undefined && !isFileState(state) && state.kind === 'subject' ? state : undefined;
}

const argument = z
  .string()
  .max(65_536)
  .refine((a) => !a.includes('\0'), 'an argument must not contain NUL');

export const commandRun = defineTool({
  name: 'command_run',
  description:
    'Run one allowed program with arguments, no shell: each argv element reaches the program as it is (quotes, ";", "|", "$(...)" are plain text). ' +
    'It runs in a folder inside the allowed roots, with a timeout, and its output is cut at a size limit.',
  category: 'command_execution',
  risk: 'high',
  needs: ['commands', 'files'],
  parameters: z.strictObject({
    argv: z.array(argument).min(1).max(1024).describe('The command name (one of the configured commands) followed by its arguments, one element each.'),
    cwd: pathArg.optional().describe('The folder to run in, inside the allowed roots; default: the first root.'),
    timeoutSeconds: z.number().positive().max(86_400).optional().describe('Stop the command after this many seconds; default and maximum are configured per command.'),
  }),
  targetFields: ['argv', 'cwd'],
  pathFields: ['cwd'],
  // The program and where it runs; its other arguments are data, not targets.
  targets: (args) => [args.argv[0] ?? '', ...(args.cwd === undefined ? [] : [args.cwd])],

  async prepare(host, args) {
    const program = await host.commands.observe(args.argv[0] ?? '');
    const observed: ObservedState[] = [program];
    const problems: Array<{ kind: 'refused'; reason: string } | undefined> = [program.exists ? undefined : { kind: 'refused', reason: program.summary }];
    if (args.cwd !== undefined) {
      try {
        // Where it runs, not what is in it: the folder's contents may change without making the call another one.
        const folder = await host.files.observe(args.cwd, { follow: true, hash: false });
        observed.push(folder);
        problems.push(folder.exists && folder.type === 'directory' ? undefined : { kind: 'refused', reason: `${args.cwd} is not a folder inside the allowed roots` });
      } catch (err) {
        observed.push({ path: args.cwd, exists: false });
        problems.push({ kind: 'refused', reason: err instanceof Error ? err.message : String(err) });
      }
    }
    return { observed, problems };
  },

  // The program must be the very file the reviewer saw (path, device, inode, size, time, mode); the folder must still be one.
  revalidate(_host, { approved, now }) {
    const then = subjectAt(approved, 0);
    const seen = subjectAt(now.observed, 0);
    if (seen === undefined || !seen.exists) return { kind: 'changed', reason: seen?.summary ?? 'the program could not be checked again' };
    if (then !== undefined && (then.identity !== seen.identity || JSON.stringify(then.facts) !== JSON.stringify(seen.facts))) {
      return { kind: 'changed', reason: `the program changed since it was checked: then ${then.summary}; now ${seen.summary}` };
    }
    const folderProblem = now.problems[1];
    if (folderProblem !== undefined) return { kind: 'changed', reason: folderProblem.reason };
    return { kind: 'ok' };
  },

  // Policy's deny lists match the program that really runs (and what it wraps), by every name of its file.
  async facts(host, args) {
    const folder = args.cwd === undefined ? { targets: [] } : await host.files.facts([args.cwd]);
    const program = await host.commands.observe(args.argv[0] ?? '');
    return { targets: folder.targets, programs: [{ command: args.argv[0] ?? '', names: programNames(program) }] };
  },

  execute: (host, args, before) => host.commands.run(args, subjectAt(before, 0)),

  // What a program did cannot be seen from here: after a crash during it, the outcome is unknown, never a second run.
  postcondition: async () => ({ present: false, undetectable: true, detail: 'whether the command ran cannot be seen from here' }),
});
