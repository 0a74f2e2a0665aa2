import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** package.json's version: beside `dist/` once built, beside `host/` when run from source. */
export function packageVersion(): string {
  for (const file of [join(__dirname, '..', '..', 'package.json'), join(__dirname, '..', 'package.json')]) {
    if (!existsSync(file)) continue;
    const version: unknown = (JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version;
    if (typeof version === 'string') return version;
  }
  return 'unknown';
}
