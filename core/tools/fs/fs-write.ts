import { z } from 'zod';
import { sha256Hex } from '../../util/sha256';
import { defineTool } from '../tool-module';
import { fileAt, pathArg, prepareFiles } from './file-targets';

export const fsWrite = defineTool({
  name: 'fs_write',
  description:
    'Write a text file inside the allowed roots. mode "create" fails if the file exists, "overwrite" replaces it, "append" adds to it.',
  category: 'file_change',
  risk: 'medium',
  needs: ['files'],
  parameters: z.strictObject({
    path: pathArg.describe('The file to write; relative paths start at the first allowed root.'),
    content: z.string().max(1_048_576).describe('The text to write (UTF-8).'),
    mode: z.enum(['create', 'overwrite', 'append']).default('create').describe('create: only a new file; overwrite: replace it; append: add to its end.'),
  }),
  targetFields: ['path'],
  pathFields: ['path'],
  prepare: (host, args) => prepareFiles(host.files, [args.path], false),
  execute: (host, args) => host.files.write(args.path, args.content, args.mode),

  async postcondition(host, args, before) {
    const prior = fileAt(before, 0);
    if (args.mode === 'append' && prior !== undefined && prior.exists) return host.files.appendedOnce(args.path, args.content, prior);
    if (args.mode === 'create' && prior?.exists === true) return { present: false, detail: `${prior.path} existed before the call, so creating it could only fail` };
    if (args.mode === 'append' && prior === undefined) return { present: false, detail: `${args.path}: cannot tell an append without the file's earlier state` };
    // create, overwrite, and an append to a file that did not exist: the file holds exactly the content.
    const now = await host.files.observe(args.path, { follow: false, hash: true });
    const intended = sha256Hex(args.content);
    if (!now.exists) return { present: false, detail: `${now.path} does not exist` };
    const present = now.type === 'file' && now.sha256 === intended;
    return { present, detail: present ? `${now.path} holds the intended content (sha256 ${intended.slice(0, 16)}…)` : `${now.path} does not hold the intended content` };
  },
});
