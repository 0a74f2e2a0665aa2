import { z } from 'zod';
import { defineTool } from '../tool-module';
import { pathArg, prepareFiles } from './file-targets';

export const fsRead = defineTool({
  name: 'fs_read',
  description: 'Read a text file inside the allowed roots (UTF-8, truncated to maxBytes).',
  category: 'read',
  risk: 'low',
  needs: ['files'],
  parameters: z.strictObject({
    path: pathArg.describe('The file to read; relative paths start at the first allowed root.'),
    maxBytes: z.number().int().min(1).max(1_048_576).default(65_536).describe('Read at most this many bytes.'),
  }),
  targetFields: ['path'],
  pathFields: ['path'],
  prepare: (host, args) => prepareFiles(host.files, [args.path], true),
  execute: (host, args) => host.files.read(args.path, args.maxBytes),
});
