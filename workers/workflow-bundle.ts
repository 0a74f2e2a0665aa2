import { join, resolve } from 'node:path';

/** The source tree the workflow bundle is built from (the repository, also when this runs from dist/). */
const sourceRoot = resolve(__dirname, '..', __dirname.includes(`${join('dist', 'workers')}`) ? '..' : '');

/**
 * How every workflow bundle of airlock is built (the prebuilt one, the
 * tests', a worker bundling on the fly). zod's own module is immutable and
 * preloaded once per worker. airlock's schemas are not shared: the SDK
 * freezes shared modules, and zod fills some properties in lazily.
 */
export function workflowBundleOptions(workflowsPath: string) {
  return {
    workflowsPath,
    failureConverterPath: join(sourceRoot, 'core', 'temporal', 'failure-converter.ts'),
    preloadModules: ['zod'],
  };
}
