import { z } from 'zod';
import { defineTool } from '../tool-module';
import { fileAt, pathArg, prepareFiles, withReversibility } from './file-targets';

export const fsChmod = defineTool({
  name: 'fs_chmod',
  description: 'Change the permission bits of a file or directory inside the allowed roots (octal, e.g. "640"; no special bits).',
  category: 'file_change',
  risk: 'high',
  needs: ['files'],
  parameters: z.strictObject({
    path: pathArg.describe('The file or directory; relative paths start at the first allowed root.'),
    // No setuid, setgid or sticky bits: this tool only sets permission bits.
    mode: z.string().regex(/^0?[0-7]{3}$/, 'mode must be 3 octal permission digits, e.g. "640"').describe('Octal permission bits, e.g. "640".'),
  }),
  targetFields: ['path'],
  pathFields: ['path'],
  // A mode kept takes no room: 0 bytes against the quota.
  prepare: async (host, args) => withReversibility(host.files, args.path, await prepareFiles(host.files, [args.path], false), () => 0, { kind: 'mode' }),
  execute: (host, args) => host.files.chmod(args.path, args.mode, host.hold),

  async postcondition(host, args, before) {
    const mode = Number.parseInt(args.mode, 8) & 0o777;
    const now = await host.files.observe(args.path, { follow: false, hash: false });
    if (!now.exists || now.type === 'symlink') return { present: false, detail: `${now.path} ${now.exists ? 'is a symbolic link' : 'does not exist'}` };
    const prior = fileAt(before, 0);
    if (prior !== undefined && prior.exists && (prior.dev !== now.dev || prior.ino !== now.ino)) return { present: false, detail: `${now.path} was replaced by another file` };
    const present = (Number.parseInt(now.mode, 8) & 0o777) === mode;
    return { present, detail: `${now.path} has mode ${now.mode}` };
  },
});
