import { z } from 'zod';
import { defineTool } from '../tool-module';
import type { UndoTarget } from '../undo';
import { fileAt, pathArg, prepareFiles } from './file-targets';

/**
 * Takes an approved reversible change back: puts what a delete moved aside
 * (`.airlock-undo/<nonce>/`) back at its path, a file as it was before a
 * write, the mode a mode change replaced back on its file, or a moved
 * entry back where it was. `airlock undo` calls it in a
 * job of its own, so it passes the same gate as any change; the model is
 * never offered it (`askedForOnly`).
 */
const undoTarget = (args: { readonly job: string; readonly call: string; readonly path: string; readonly to?: string | undefined }): UndoTarget => ({
  job: args.job,
  call: args.call,
  path: args.path,
  ...(args.to !== undefined ? { to: args.to } : {}),
});

export const fsUndo = defineTool({
  name: 'fs_undo',
  description: 'Take back an approved reversible change of another job: put back what a delete moved aside, a file as it was before a write, the mode a mode change replaced, or a moved entry where it was.',
  category: 'file_change',
  risk: 'medium',
  needs: ['files'],
  askedForOnly: true,
  parameters: z.strictObject({
    job: z.string().min(1).max(1000).describe('The job whose call made the change.'),
    call: z.string().min(1).max(1000).describe('The call that made the change.'),
    path: pathArg.describe('The path the change acted on, as that call named it (for a move: where the entry came from).'),
    to: pathArg.optional().describe('For a move: its destination as that call named it, where the entry is now.'),
  }),
  targetFields: ['path', 'to'],
  pathFields: ['path', 'to'],
  editable: [],

  async prepare(host, args) {
    const prepared = await prepareFiles(host.files, args.to === undefined ? [args.path] : [args.path, args.to], false);
    const can = await host.files.undoable(undoTarget(args));
    // What cannot be undone is told to the reviewer, and refused when it runs: the card never offers it as if it could.
    return can.ok ? prepared : { ...prepared, problems: [{ kind: 'refused', reason: can.reason }] };
  },
  execute: (host, args) => host.files.restore(undoTarget(args)),

  postcondition: (host, args, before) => host.files.restored(undoTarget(args), { pathWasFree: fileAt(before, 0)?.exists !== true }),
});
