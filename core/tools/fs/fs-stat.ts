import { z } from 'zod';
import { defineTool } from '../tool-module';
import { pathArg, prepareFiles } from './file-targets';

export const fsStat = defineTool({
  name: 'fs_stat',
  description: 'Describe a file or directory inside the allowed roots: type, size, mode, modification time.',
  category: 'read',
  risk: 'low',
  needs: ['files'],
  parameters: z.strictObject({ path: pathArg.describe('The file or directory; relative paths start at the first allowed root.') }),
  targetFields: ['path'],
  pathFields: ['path'],
  prepare: (host, args) => prepareFiles(host.files, [args.path], true),
  execute: (host, args) => host.files.stat(args.path),
});
