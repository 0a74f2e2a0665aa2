import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { startDevServer } from '../client/dev/dev-server';
import { freePort } from '../client/dev/ports';
import { resolveTemporalCli } from '../client/dev/temporal-cli';
import { bundleFiles, workflowBundleOptions } from '../workers/workflow-bundle';

/**
 * One real Temporal dev server (in memory, free port) and one workflow
 * bundle for the whole run. Each test file works in its own namespace.
 */
export default async function globalSetup(): Promise<void> {
  const cli = await resolveTemporalCli({ log: (line) => process.stderr.write(`${line}\n`) });
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
