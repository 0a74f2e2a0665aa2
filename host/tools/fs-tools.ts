import { constants } from 'node:fs';
import { appendFile, chmod, lstat, open, readdir, rename, rm, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import type { z } from 'zod';
import type { fsChmod, fsDelete, fsList, fsMove, fsRead, fsStat, fsWrite } from '../../core/tools/definitions';
import { truncate } from '../../core/masking';
import { observe } from './observe';
import { ToolRefusal, type Roots } from '../roots';

/** What a tool run produced, as the model will read it. */
export interface ToolOutcome {
  readonly ok: boolean;
  readonly output: string;
}

const MAX_OUTPUT_CHARS = 16_000;
const MAX_LIST_ENTRIES = 500;

type Args<T extends { parameters: z.ZodType }> = z.output<T['parameters']>;

function errnoMessage(err: unknown, path: string): string {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT':
      return `no such file or directory: ${path}`;
    case 'EEXIST':
      return `already exists: ${path}`;
    case 'ENOTDIR':
      return `not a directory: ${path}`;
    case 'EISDIR':
      return `is a directory: ${path}`;
    case 'ENOTEMPTY':
      return `directory not empty: ${path} (set recursive to delete it with its contents)`;
    case 'EACCES':
    case 'EPERM':
      return `permission denied: ${path}`;
    case 'EXDEV':
      return `cannot move across file systems: ${path}`;
    default:
      return `${code ?? 'error'}: ${(err as Error).message}`;
  }
}

async function guarded(path: string, run: () => Promise<string>): Promise<ToolOutcome> {
  try {
    return { ok: true, output: truncate(await run(), MAX_OUTPUT_CHARS) };
  } catch (err) {
    if (err instanceof ToolRefusal) return { ok: false, output: `Refused: ${err.message}` };
    return { ok: false, output: `Error: ${errnoMessage(err, path)}` };
  }
}

function refuseRoot(roots: Roots, path: string, verb: string): void {
  if (roots.isRoot(path)) throw new ToolRefusal(`refusing to ${verb} an allowed root itself (${path})`);
}

export function createFsTools(roots: Roots) {
  return {
    fs_list: (a: Args<typeof fsList>) =>
      guarded(a.path, async () => {
        const path = await roots.resolve(a.path, { follow: true });
        const entries = await readdir(path, { withFileTypes: true });
        entries.sort((x, y) => (x.name < y.name ? -1 : 1));
        const lines = await Promise.all(
          entries.slice(0, MAX_LIST_ENTRIES).map(async (e) => {
            if (e.isDirectory()) return `${e.name}/`;
            if (e.isSymbolicLink()) return `${e.name} -> (link)`;
            const info = await lstat(`${path}/${e.name}`).catch(() => undefined);
            return `${e.name} (${info?.size ?? '?'} bytes)`;
          }),
        );
        const more = entries.length > MAX_LIST_ENTRIES ? `\n… ${entries.length - MAX_LIST_ENTRIES} more entries` : '';
        return `${path}: ${entries.length} entries\n${lines.join('\n')}${more}`;
      }),

    fs_read: (a: Args<typeof fsRead>) =>
      guarded(a.path, async () => {
        const path = await roots.resolve(a.path, { follow: true });
        const info = await stat(path);
        if (!info.isFile()) throw new ToolRefusal(`${a.path} is not a regular file`);
        const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
        try {
          const buffer = Buffer.alloc(Math.min(a.maxBytes, info.size));
          const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
          const text = buffer.subarray(0, bytesRead).toString('utf8');
          return info.size > bytesRead ? `${text}\n[truncated: ${info.size - bytesRead} more bytes]` : text;
        } finally {
          await handle.close();
        }
      }),

    fs_stat: (a: Args<typeof fsStat>) =>
      guarded(a.path, async () => {
        const path = await roots.resolve(a.path, { follow: true });
        const seen = await observe(path, 0);
        if (!seen.exists) return JSON.stringify({ path, exists: false });
        return JSON.stringify({
          path,
          exists: true,
          type: seen.type,
          size: seen.size,
          mode: seen.mode,
          modified: new Date(seen.mtimeMs).toISOString(),
          ...(seen.entries !== null ? { entries: seen.entries } : {}),
        });
      }),

    fs_write: (a: Args<typeof fsWrite>) =>
      guarded(a.path, async () => {
        const path = await roots.resolve(a.path, { follow: false });
        const existing = await lstat(path).catch(() => undefined);
        if (existing !== undefined && !existing.isFile()) throw new ToolRefusal(`${a.path} exists and is not a regular file`);
        if (a.mode === 'append') await appendFile(path, a.content, { flag: 'a' });
        else await writeFile(path, a.content, { flag: a.mode === 'create' ? 'wx' : 'w' });
        return `wrote ${Buffer.byteLength(a.content)} bytes to ${path} (${a.mode})`;
      }),

    fs_move: (a: Args<typeof fsMove>) =>
      guarded(a.from, async () => {
        const from = await roots.resolve(a.from, { follow: false });
        const to = await roots.resolve(a.to, { follow: false });
        refuseRoot(roots, from, 'move');
        refuseRoot(roots, to, 'replace');
        await lstat(from);
        const target = await lstat(to).catch(() => undefined);
        if (target !== undefined && !a.overwrite) throw new ToolRefusal(`${a.to} already exists (set overwrite to replace it)`);
        if (target !== undefined && target.isDirectory()) throw new ToolRefusal(`${a.to} is a directory; refusing to replace it`);
        await rename(from, to);
        return `moved ${from} to ${to}`;
      }),

    fs_delete: (a: Args<typeof fsDelete>) =>
      guarded(a.path, async () => {
        const path = await roots.resolve(a.path, { follow: false });
        refuseRoot(roots, path, 'delete');
        const info = await lstat(path);
        if (info.isDirectory()) {
          if (a.recursive) await rm(path, { recursive: true });
          else await rmdir(path);
        } else {
          await unlink(path);
        }
        return `deleted ${path}`;
      }),

    fs_chmod: (a: Args<typeof fsChmod>) =>
      guarded(a.path, async () => {
        const path = await roots.resolve(a.path, { follow: false });
        refuseRoot(roots, path, 'change the mode of');
        await chmod(path, Number.parseInt(a.mode, 8) & 0o777);
        return `changed mode of ${path} to ${a.mode}`;
      }),
  };
}

export type FsTools = ReturnType<typeof createFsTools>;
