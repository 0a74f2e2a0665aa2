import { z } from 'zod';
import { defineTool } from '../tool-module';
import type { FileState } from '../observed-state';
import { fileAt, pathArg, prepareFiles, withReversibility } from './file-targets';

/** What keeping the move for undo sets aside: the file it replaces, if any. */
function replacedBytes(state: FileState | undefined): number {
  return state?.exists === true ? state.size : 0;
}

export const fsMove = defineTool({
  name: 'fs_move',
  description: 'Move or rename a file or directory inside the allowed roots.',
  category: 'file_change',
  risk: 'medium',
  needs: ['files'],
  parameters: z.strictObject({
    from: pathArg.describe('What to move; relative paths start at the first allowed root.'),
    to: pathArg.describe('Its new path (not an existing folder to move it into).'),
    overwrite: z.boolean().default(false).describe('Replace an existing file at the destination.'),
  }),
  targetFields: ['from', 'to'],
  pathFields: ['from', 'to'],
  async prepare(host, args) {
    const prepared = await prepareFiles(host.files, [args.from, args.to], false);
    // Kept for undo: the file it replaces at the destination (the moved entry itself stays where the move puts it).
    return prepared.problems[1] === undefined ? withReversibility(host.files, args.from, prepared, () => replacedBytes(fileAt(prepared.observed, 1)), { kind: 'move', to: args.to }) : prepared;
  },
  execute: (host, args, before) => host.files.move(args.from, args.to, args.overwrite, host.hold === undefined ? undefined : { ...host.hold, bytes: replacedBytes(fileAt(before, 1)) }),

  async postcondition(host, args, before) {
    const source = fileAt(before, 0);
    const fromNow = await host.files.observe(args.from, { follow: false, hash: false });
    const toNow = await host.files.observe(args.to, { follow: false, hash: true });
    if (source === undefined || !source.exists) return { present: false, detail: `${args.from}: cannot tell a move without the source's earlier state` };
    if (fromNow.exists) return { present: false, detail: `${fromNow.path} is still there` };
    // rename keeps the inode: the destination is the very entry that was the source.
    // A file keeps its mtime too (a new file with a reused inode number would not); a moved folder's changes with its parent link.
    const same =
      toNow.exists &&
      toNow.dev === source.dev &&
      toNow.ino === source.ino &&
      toNow.type === source.type &&
      (source.sha256 === null || toNow.sha256 === source.sha256) &&
      (source.type === 'directory' || toNow.mtimeMs === source.mtimeMs);
    return same
      ? { present: true, detail: `${fromNow.path} is gone and ${toNow.path} is the moved entry (same inode${source.sha256 !== null ? ' and sha256' : ''})` }
      : { present: false, detail: `${fromNow.path} is gone but ${toNow.path} is not the moved entry` };
  },
});
