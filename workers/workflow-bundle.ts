import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The source tree the workflow bundle is built from (the repository, also when this runs from dist/). */
const sourceRoot = resolve(__dirname, '..', __dirname.includes(`${join('dist', 'workers')}`) ? '..' : '');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

/**
 * How every workflow bundle of airlock is built (the prebuilt one, the
 * tests', a worker bundling on the fly). `core/` is pure and keeps no
 * per-workflow state, and zod schemas are immutable: preloaded, they are
 * evaluated once per worker instead of once per workflow, which is most of
 * what a cached (parked) workflow used to cost.
 */
export function workflowBundleOptions(workflowsPath: string) {
  return {
    workflowsPath,
    failureConverterPath: join(sourceRoot, 'core', 'failure-converter.ts'),
    preloadModules: ['zod'],
  };
}
