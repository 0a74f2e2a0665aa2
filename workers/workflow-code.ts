import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { packageVersion } from '../host/package-version';
import { defaultBuildId } from '../core/temporal/deployments';
import { bundleFiles, workflowBundleOptions, type FailureMessages } from './workflow-bundle';

/**
 * Where the agent worker loads workflow code from: the prebuilt bundles when
 * `npm run build` made them (the worker takes the one whose failure messages
 * match its codec), or the sources, bundled at start.
 */
export type WorkflowSource = { readonly bundles: Readonly<Record<FailureMessages, string>> } | { readonly workflowsPath: string };

export function defaultWorkflowSource(): WorkflowSource {
  const dist = join(__dirname, '..');
  const bundles = { encoded: join(dist, bundleFiles.encoded), plain: join(dist, bundleFiles.plain) };
  if (__dirname.includes(`${join('dist', 'workers')}`) && existsSync(bundles.encoded) && existsSync(bundles.plain)) return { bundles };
  return { workflowsPath: require.resolve('../workflows') };
}

/** The workflow code a worker runs, and the build id it runs as. */
export interface WorkflowCode {
  readonly code: string;
  readonly buildId: string;
}

// One bundle per source and kind per process: tests start many workers from the same files.
const loaded = new Map<string, Promise<string>>();

function codeOf(source: WorkflowSource, failures: FailureMessages): Promise<string> {
  const key = 'bundles' in source ? `file:${source.bundles[failures]}` : `src:${source.workflowsPath}:${failures}`;
  let code = loaded.get(key);
  if (code === undefined) {
    code =
      'bundles' in source
        ? Promise.resolve(readFileSync(source.bundles[failures], 'utf8'))
        : bundleWorkflowCode(workflowBundleOptions(source.workflowsPath, failures)).then((b) => b.code);
    loaded.set(key, code);
    code.catch(() => loaded.delete(key));
  }
  return code;
}

/**
 * Loads the bundle whose failure converter matches the worker's codec (sources
 * are bundled the way the prebuilt ones are). The build id is `buildId` when
 * given (AIRLOCK_BUILD_ID), else the package version plus a hash of this code:
 * a changed bundle is a new build.
 */
export async function loadWorkflowCode(input: { readonly source: WorkflowSource; readonly failures: FailureMessages; readonly buildId?: string }): Promise<WorkflowCode> {
  const code = await codeOf(input.source, input.failures);
  const bundleDigest = createHash('sha256').update(code).digest('hex');
  return { code, buildId: input.buildId ?? defaultBuildId({ packageVersion: packageVersion(), bundleDigest }) };
}
