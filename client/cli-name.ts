import { realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { CliName } from '../core/approval/card';

function real(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * How the reader should type airlock in the commands we print. `airlock`
 * when this process runs the `airlock` that PATH finds (an installed bin:
 * `npm install -g`, or a linked checkout); `npx airlock` otherwise, and
 * always when started through npm or npx (`npm_command` is set), as from
 * a project that has airlock in its node_modules.
 */
export function cliName(env: NodeJS.ProcessEnv = process.env, script: string | undefined = process.argv[1]): CliName {
  if (env.npm_command !== undefined || script === undefined) return 'npx airlock';
  const running = real(script);
  if (running === undefined) return 'npx airlock';
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    if (real(join(dir, 'airlock')) === running) return 'airlock';
  }
  return 'npx airlock';
}
