import { z } from 'zod';
import { defineTool } from '../tool-module';
import { fileAt, pathArg, prepareFiles } from './file-targets';

export const fsDelete = defineTool({
  name: 'fs_delete',
  description: 'Delete a file, or a directory when recursive is true, inside the allowed roots.',
  category: 'delete',
  risk: 'high',
  needs: ['files'],
  parameters: z.strictObject({
    path: pathArg.describe('What to delete; relative paths start at the first allowed root.'),
    recursive: z.boolean().default(false).describe('Delete a directory with everything below it.'),
  }),
  targetFields: ['path'],
  pathFields: ['path'],
  async prepare(host, args) {
    const prepared = await prepareFiles(host.files, [args.path], false);
    // A target the tool will refuse, or one not there, has nothing to keep.
    const undo = prepared.problems[0] === undefined && fileAt(prepared.observed, 0)?.exists === true ? await host.files.reversibility(args.path).catch(() => undefined) : undefined;
    return undo === undefined ? prepared : { ...prepared, undo };
  },
  execute: (host, args) => host.files.remove(args.path, args.recursive, host.hold),

  async postcondition(host, args, before) {
    // Nothing was there to delete: the call could only have failed, so its effect is not "present".
    const prior = fileAt(before, 0);
    if (prior?.exists === false) return { present: false, detail: `${prior.path} did not exist before the call` };
    const now = await host.files.observe(args.path, { follow: false, hash: false });
    return now.exists ? { present: false, detail: `${now.path} still exists` } : { present: true, detail: `${now.path} is gone` };
  },
});
