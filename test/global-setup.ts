import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { startDevServer } from '../ops/dev/dev-server';
import { freePort } from './helpers/ports';
import { resolveTemporalCli } from '../ops/dev/temporal-cli';
import { resolveTemporalServer } from '../ops/topology/temporal-server';
import { resolveUiServer } from '../ops/topology/ui-server';
import { bundleFiles, workflowBundleOptions } from '../workers/workflow-bundle';

/**
 * One real Temporal dev server (in memory, free port) and the workflow
 * bundles for the whole run; the full server and Web UI the topology tests
 * run are built (or found in the cache) first. Each test file works in its own namespace.
 */
export default async function globalSetup(): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const cli = await resolveTemporalCli({ log });
  // The production topology's server and Web UI: built here, once, before any test runs beside the build.
  await resolveTemporalServer(process.env, log);
  await resolveUiServer(process.env, log);
  const server = await startDevServer({ cli: cli.path, port: await freePort() });
  const dir = mkdtempSync(join(tmpdir(), 'airlock-test-'));
  // Both kinds, as `npm run build` makes them: workers take the one matching their codec.
  for (const failures of ['encoded', 'plain'] as const) {
    const { code } = await bundleWorkflowCode({
      ...workflowBundleOptions(require.resolve('./workflows'), failures),
      logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: (m) => process.stderr.write(`${m}\n`) },
    });
    writeFileSync(join(dir, bundleFiles[failures]), code);
  }
  process.env.AIRLOCK_TEST_TEMPORAL_ADDRESS = server.address;
  process.env.AIRLOCK_TEST_TEMPORAL_CLI = cli.path;
  process.env.AIRLOCK_TEST_WORKFLOW_BUNDLE = join(dir, bundleFiles.encoded);
  process.env.AIRLOCK_TEST_WORKFLOW_BUNDLE_PLAIN = join(dir, bundleFiles.plain);
  process.env.AIRLOCK_TEST_TMP = dir;
  (globalThis as Record<string, unknown>).__airlockTestServer = server;
}
