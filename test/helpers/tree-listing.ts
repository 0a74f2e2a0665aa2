import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Every entry below a folder with what a move or a restore must keep: its
 * relative name, type, size, mode, inode, mtime and a file's content digest.
 */
export function treeListing(folder: string): string[] {
  const out: string[] = [];
  const walk = (at: string, rel: string) => {
    for (const name of readdirSync(at).sort()) {
      const path = join(at, name);
      const s = lstatSync(path);
      const digest = s.isFile() ? ` ${createHash('sha256').update(readFileSync(path)).digest('hex')}` : '';
      out.push(`${rel}${name} ${s.isDirectory() ? 'd' : 'f'} ${s.size} ${(s.mode & 0o7777).toString(8)} ${s.ino} ${s.mtimeMs}${digest}`);
      if (s.isDirectory()) walk(path, `${rel}${name}/`);
    }
  };
  walk(folder, '');
  return out;
}
