import { join, resolve } from 'node:path';
import type { DataConverter } from '@temporalio/common';

/** The source tree the workflow bundle is built from (the repository, also when this runs from dist/). */
const sourceRoot = resolve(__dirname, '..', __dirname.includes(`${join('dist', 'workers')}`) ? '..' : '');

/**
 * Where failure messages go: into payloads the codec encrypts (`encoded`),
 * or in plain sight where the codec is off (`plain`). The workflow bundle
 * carries its failure converter, so there is one prebuilt bundle of each.
 */
export type FailureMessages = 'encoded' | 'plain';

/** The prebuilt bundles' file names in dist/. */
export const bundleFiles: Readonly<Record<FailureMessages, string>> = { encoded: 'workflow-bundle.js', plain: 'workflow-bundle.plain.js' };

/** Failure messages follow the codec: encoded exactly when a payload codec encrypts them. */
export function failureMessagesOf(dataConverter: DataConverter | undefined): FailureMessages {
  return (dataConverter?.payloadCodecs?.length ?? 0) > 0 ? 'encoded' : 'plain';
}

/** The failure converter module of each kind (a source path: the bundler and workers load either form). */
export function failureConverterSource(failures: FailureMessages): string {
  return join(sourceRoot, 'core', 'temporal', failures === 'encoded' ? 'failure-converter.ts' : 'plain-failure-converter.ts');
}

/**
 * What each workflow thread loads once, before its first workflow, in
 * order: zod (workflow-preload.ts), the workflows with all they import,
 * then the pass that readies their exported schemas for the SDK's freeze
 * (workflow-share.ts).
 */
export function workflowPreloadSources(workflowsPath: string): string[] {
  return [join(sourceRoot, 'workers', 'workflow-preload.ts'), workflowsPath, join(sourceRoot, 'workers', 'workflow-share.ts')];
}

/**
 * How every workflow bundle of airlock is built (the prebuilt ones, the
 * tests', a worker bundling on the fly). Everything the workflows load is
 * preloaded once per workflow thread, shared by its jobs and frozen there
 * by the SDK; a new job evaluates none of it again.
 */
export function workflowBundleOptions(workflowsPath: string, failures: FailureMessages) {
  return {
    workflowsPath,
    failureConverterPath: failureConverterSource(failures),
    preloadModules: workflowPreloadSources(workflowsPath),
  };
}
