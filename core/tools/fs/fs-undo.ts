import { z } from 'zod';
import { sha256Hex } from '../../util/sha256';
import type { Prepared } from '../tool-module';
import { defineTool } from '../tool-module';
import type { Undoable, UndoTarget } from '../undo';
import { humanSize } from '../../util/human-size';
import { fileAt, pathArg, prepareFiles } from './file-targets';
import { MAX_MOVES } from './move-plan';

/**
 * Takes an approved reversible change back: puts what a delete moved aside
 * (`.airlock-undo/<nonce>/`) back at its path, a file as it was before a
 * write, the mode a mode change replaced back on its file, a moved entry
 * back where it was, or every entry a bulk move moved. `airlock undo`
 * calls it in a job of its own, so it passes the same gate as any change;
 * the model is never offered it (`askedForOnly`).
 */

const moveSchema = z.strictObject({ from: pathArg, to: pathArg });

const parameters = z
  .strictObject({
    job: z.string().min(1).max(1000).describe('The job whose call made the change.'),
    call: z.string().min(1).max(1000).describe('The call that made the change.'),
    path: pathArg.optional().describe('The path the change acted on, as that call named it (for a move: where the entry came from).'),
    to: pathArg.optional().describe('For a move: its destination as that call named it, where the entry is now.'),
    moves: z.array(moveSchema).min(1).max(MAX_MOVES).optional().describe('For a bulk move: its whole list of moves, as that call named them.'),
  })
  .superRefine((a, ctx) => {
    if ((a.path === undefined) === (a.moves === undefined)) ctx.addIssue({ code: 'custom', message: 'name either the path the change acted on or, for a bulk move, its moves' });
    else if (a.moves !== undefined && a.to !== undefined) ctx.addIssue({ code: 'custom', message: 'a bulk move is named by its moves alone (no to)' });
  });
type Args = z.output<typeof parameters>;

const undoTarget = (args: Args): UndoTarget =>
  args.moves !== undefined ? { job: args.job, call: args.call, moves: args.moves } : { job: args.job, call: args.call, path: args.path ?? '', ...(args.to !== undefined ? { to: args.to } : {}) };

const setName = (count: number) => `${count} moved ${count === 1 ? 'entry' : 'entries'}`;

/** The moved entries as one state: where each is now (inode, type, size, time), pinned by a digest, and what the undo would move back (`can`); content is compared when the undo runs. */
async function observeMoves(files: Parameters<typeof prepareFiles>[0], moves: NonNullable<Args['moves']>, can: Undoable): Promise<Prepared> {
  const lines: string[] = [];
  for (const m of moves) {
    const line: unknown[] = [m.from, m.to];
    for (const path of [m.from, m.to]) {
      try {
        const s = await files.observe(path, { follow: false, hash: false });
        line.push(s.exists ? [s.type, s.dev, s.ino, s.size, s.mtimeMs, s.mode] : null);
      } catch {
        line.push('unobservable');
      }
    }
    lines.push(JSON.stringify(line));
  }
  const digest = sha256Hex(`${lines.join('\n')}\n`);
  const first = moves[0];
  const entries = `${moves.length} ${moves.length === 1 ? 'entry' : 'entries'}`;
  // What the undo would move back, when it can: how many of the call's entries, and their size.
  const back = can.ok ? { moved: can.entries ?? moves.length, bytes: can.bytes } : undefined;
  const what = back === undefined ? entries : `${back.moved} of ${entries} (${humanSize(back.bytes)})`;
  return {
    observed: [
      {
        kind: 'subject',
        subject: setName(moves.length),
        exists: true,
        identity: digest,
        summary: `${what} to move back${first !== undefined ? `, first ${first.to} → ${first.from}` : ''}`,
        facts: { count: moves.length, digest, ...back },
      },
    ],
    problems: [undefined],
  };
}

export const fsUndo = defineTool({
  name: 'fs_undo',
  description:
    'Take back an approved reversible change of another job: put back what a delete moved aside, a file as it was before a write, the mode a mode change replaced, a moved entry where it was, or the entries of a bulk move.',
  category: 'file_change',
  risk: 'medium',
  needs: ['files'],
  askedForOnly: true,
  parameters,
  targetFields: ['path', 'to', 'moves'],
  pathFields: ['path', 'to'],
  editable: [],
  targets: (args: Args) => (args.moves !== undefined ? [setName(args.moves.length)] : [args.path ?? '', ...(args.to !== undefined ? [args.to] : [])]),
  pathsOf: (args: Args) => (args.moves !== undefined ? args.moves.flatMap((m) => [m.from, m.to]) : [args.path ?? '', ...(args.to !== undefined ? [args.to] : [])]),
  mapPaths: (args: Args, map) => ({
    ...args,
    ...(args.path !== undefined ? { path: map(args.path) } : {}),
    ...(args.to !== undefined ? { to: map(args.to) } : {}),
    ...(args.moves !== undefined ? { moves: args.moves.map((m) => ({ from: map(m.from), to: map(m.to) })) } : {}),
  }),

  async prepare(host, args) {
    const can = await host.files.undoable(undoTarget(args));
    const prepared = args.moves !== undefined ? await observeMoves(host.files, args.moves, can) : await prepareFiles(host.files, args.to === undefined ? [args.path ?? ''] : [args.path ?? '', args.to], false);
    // What cannot be undone is told to the reviewer, and refused when it runs: the card never offers it as if it could.
    return can.ok ? prepared : { ...prepared, problems: [{ kind: 'refused', reason: can.reason }] };
  },
  execute: (host, args) => host.files.restore(undoTarget(args)),

  postcondition: (host, args, before) => host.files.restored(undoTarget(args), { pathWasFree: fileAt(before, 0)?.exists !== true }),
});
