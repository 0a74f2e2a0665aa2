import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { startDevServer } from '../client/dev/dev-server';
import { freePort } from '../client/dev/ports';
import { resolveTemporalCli } from '../client/dev/temporal-cli';
import { workflowBundleOptions } from '../workers/workflow-bundle';

/**
 * One real Temporal dev server (in memory, free port) and one workflow
 * bundle for the whole run. Each test file works in its own namespace.
 */
export default async function globalSetup(): Promise<void> {
  const cli = await resolveTemporalCli({ log: (line) => process.stderr.write(`${line}\n`) });
  const server = await startDevServer({ cli: cli.path, port: await freePort() });
  const dir = mkdtempSync(join(tmpdir(), 'airlock-test-'));
  const { code } = await bundleWorkflowCode({
    ...workflowBundleOptions(require.resolve('./workflows')),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: (m) => process.stderr.write(`${m}\n`) },
  });
  const bundle = join(dir, 'workflow-bundle.js');
  writeFileSync(bundle, code);
  process.env.AIRLOCK_TEST_TEMPORAL_ADDRESS = server.address;
  process.env.AIRLOCK_TEST_TEMPORAL_CLI = cli.path;
  process.env.AIRLOCK_TEST_WORKFLOW_BUNDLE = bundle;
  process.env.AIRLOCK_TEST_TMP = dir;
  (globalThis as Record<string, unknown>).__airlockTestServer = server;
}
