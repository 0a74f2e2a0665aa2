import { z } from 'zod';
import { humanSize } from '../../util/human-size';
import { sha256Hex } from '../../util/sha256';
import type { FileCapability } from '../capabilities/files';
import { looksLikeText, PREVIEW_READ_LIMIT, textPreview, type ContentPreview } from '../content-preview';
import type { FileState } from '../observed-state';
import { defineTool } from '../tool-module';
import { fileAt, pathArg, prepareFiles, withReversibility } from './file-targets';

const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;

/**
 * What the write changes, as a reviewer reads it: a diff of the file as it
 * is against what it would hold. Only what was observed is diffed: content
 * read after the file changed (another digest) is not shown as if it were.
 */
async function writePreview(
  files: FileCapability,
  args: { readonly path: string; readonly content: string; readonly mode: 'create' | 'overwrite' | 'append' },
  observed: FileState | undefined,
): Promise<ContentPreview | undefined> {
  const path = observed?.path ?? args.path;
  const incoming = looksLikeText(args.content);
  if (observed === undefined || !observed.exists) {
    return incoming ? textPreview(path, null, args.content) : { kind: 'binary', path, beforeBytes: null, afterBytes: utf8Bytes(args.content) };
  }
  // A create over an existing file, or a folder or link: the tool refuses it, and the card says so already.
  if (observed.type !== 'file' || args.mode === 'create') return undefined;
  const now = await files.contents(args.path, PREVIEW_READ_LIMIT);
  if (now.kind !== 'file') return undefined;
  const after = (before: string) => (args.mode === 'append' ? before + args.content : args.content);
  const afterBytes = args.mode === 'append' ? now.size + utf8Bytes(args.content) : utf8Bytes(args.content);
  if (now.sha256 === null) return { kind: 'unavailable', path, why: `the file is too large to compare (${humanSize(now.size)})` };
  if (observed.sha256 !== null && now.sha256 !== observed.sha256) return { kind: 'unavailable', path, why: 'the file changed while it was being read' };
  if (now.text === null || !incoming) return { kind: 'binary', path, beforeBytes: now.size, afterBytes };
  return textPreview(path, now.text, after(now.text));
}

/** What keeping the write for undo takes against the quota: the old file an overwrite replaces; nothing for an append (it is cut back). */
function keptBytes(mode: 'create' | 'overwrite' | 'append', state: FileState | undefined): number | undefined {
  if (mode === 'append') return 0;
  return state?.exists === true && state.type === 'file' ? state.size : undefined;
}

export const fsWrite = defineTool({
  name: 'fs_write',
  description:
    'Write a text file inside the allowed roots. mode "create" fails if the file exists, "overwrite" replaces it (empty content truncates it), "append" adds to it.',
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
  async prepare(host, args) {
    const prepared = await prepareFiles(host.files, [args.path], false);
    // A new file replaces nothing: there is nothing to keep.
    if (args.mode === 'create') return prepared;
    return withReversibility(host.files, args.path, prepared, (t) => keptBytes(args.mode, t), args.mode === 'overwrite' ? { kind: 'replace' } : { kind: 'append', adds: utf8Bytes(args.content) });
  },
  preview: (host, args, observed) => writePreview(host.files, args, fileAt(observed, 0)),
  execute: (host, args, before) => {
    const bytes = keptBytes(args.mode, fileAt(before, 0));
    return host.files.write(args.path, args.content, args.mode, host.hold === undefined || bytes === undefined ? host.hold : { ...host.hold, bytes });
  },

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
