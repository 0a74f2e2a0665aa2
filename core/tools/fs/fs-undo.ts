import { z } from 'zod';
import { defineTool } from '../tool-module';
import { fileAt, pathArg, prepareFiles } from './file-targets';

/**
 * Takes an approved reversible change back: puts what a delete moved aside
 * (`.airlock-undo/<nonce>/`) back at its path, or the mode a mode change
 * replaced back on its file. `airlock undo` calls it in a
 * job of its own, so it passes the same gate as any change; the model is
 * never offered it (`askedForOnly`).
 */
export const fsUndo = defineTool({
  name: 'fs_undo',
  description: 'Take back an approved reversible change of another job: put back what a delete moved aside, or the mode a mode change replaced.',
  category: 'file_change',
  risk: 'medium',
  needs: ['files'],
  askedForOnly: true,
  parameters: z.strictObject({
    job: z.string().min(1).max(1000).describe('The job whose call made the change.'),
    call: z.string().min(1).max(1000).describe('The call that made the change.'),
    path: pathArg.describe('The path the change acted on, as that call named it.'),
  }),
  targetFields: ['path'],
  pathFields: ['path'],
  editable: [],

  async prepare(host, args) {
    const prepared = await prepareFiles(host.files, [args.path], false);
    const can = await host.files.undoable({ job: args.job, call: args.call, path: args.path });
    // What cannot be undone is told to the reviewer, and refused when it runs: the card never offers it as if it could.
    return can.ok ? prepared : { ...prepared, problems: [{ kind: 'refused', reason: can.reason }] };
  },
  execute: (host, args) => host.files.restore({ job: args.job, call: args.call, path: args.path }),

  postcondition: (host, args, before) => host.files.restored({ job: args.job, call: args.call, path: args.path }, { pathWasFree: fileAt(before, 0)?.exists !== true }),
});
