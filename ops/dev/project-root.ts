import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

let cached: string | undefined;

/** The airlock checkout this code runs from, whether from source or from `dist/`. */
export function projectRoot(): string {
  if (cached !== undefined) return cached;
  let dir = __dirname;
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'airlock') {
      cached = dir;
      return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find airlock's package.json above ${__dirname}`);
    dir = parent;
  }
}
