import { z } from 'zod';
import { defineTool } from '../tool-module';
import type { FileState } from '../observed-state';
import { fileAt, pathArg, prepareFiles, withReversibility } from './file-targets';

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
  prepare: async (host, args) => withReversibility(host.files, args.path, await prepareFiles(host.files, [args.path], false), keptBytes),
  execute: (host, args, before) => {
    const bytes = keptBytes(fileAt(before, 0));
    return host.files.remove(args.path, args.recursive, host.hold === undefined || bytes === undefined ? host.hold : { ...host.hold, bytes });
  },

  async postcondition(host, args, before) {
    // Nothing was there to delete: the call could only have failed, so its effect is not "present".
    const prior = fileAt(before, 0);
    if (prior?.exists === false) return { present: false, detail: `${prior.path} did not exist before the call` };
    const now = await host.files.observe(args.path, { follow: false, hash: false });
    return now.exists ? { present: false, detail: `${now.path} still exists` } : { present: true, detail: `${now.path} is gone` };
  },
});

/** What a delete of the observed entry would keep for undo: a file's bytes, or every file's below a folder; undefined when not known. */
function keptBytes(state: FileState | undefined): number | undefined {
  if (state === undefined || !state.exists) return undefined;
  if (state.type !== 'directory') return state.size;
  return state.tree?.complete === true ? state.tree.bytes : undefined;
}
