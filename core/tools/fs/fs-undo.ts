import { z } from 'zod';
import { defineTool } from '../tool-module';
import { fileAt, pathArg, prepareFiles } from './file-targets';

/**
 * Takes an approved reversible change back: puts what it moved aside
 * (`.airlock-undo/<nonce>/`) back at its path. `airlock undo` calls it in a
 * job of its own, so it passes the same gate as any change; the model is
 * never offered it (`askedForOnly`).
 */
export const fsUndo = defineTool({
  name: 'fs_undo',
  description: 'Put back what an approved reversible change of another job moved aside, at the path it had.',
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

  async postcondition(host, args, before) {
    // Something was at the path before: the undo could only have been refused.
    const prior = fileAt(before, 0);
    if (prior?.exists === true) return { present: false, detail: `${prior.path} existed before the undo` };
    return host.files.restored({ job: args.job, call: args.call, path: args.path });
  },
});
