import { z } from 'zod';
import { defineTool } from '../tool-module';
import { pathArg, prepareFiles } from './file-targets';

export const fsList = defineTool({
  name: 'fs_list',
  description: 'List the entries of a directory inside the allowed roots.',
  category: 'read',
  risk: 'low',
  needs: ['files'],
  parameters: z.strictObject({ path: pathArg.describe('The directory to list; relative paths start at the first allowed root.') }),
  targetFields: ['path'],
  pathFields: ['path'],
  prepare: (host, args) => prepareFiles(host.files, [args.path], true),
  execute: (host, args) => host.files.list(args.path),
});
