import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { bundleFiles, workflowBundleOptions, type FailureMessages } from '../workers/workflow-bundle';

/**
 * Prebuilds the workflow bundles into dist/, so workers start without
 * bundling (and every worker runs byte-identical workflow code): one whose
 * failure messages the codec encrypts, one that leaves them readable.
 */
async function main(): Promise<void> {
  const root = resolve(__dirname, '..', '..');
  for (const failures of ['encoded', 'plain'] as const satisfies readonly FailureMessages[]) {
    const { code } = await bundleWorkflowCode({
      ...workflowBundleOptions(join(root, 'workflows', 'index.ts'), failures),
      logger: { log: () => undefined, trace: () => undefined, debug: () => undefined, info: () => undefined, warn: (m) => process.stderr.write(`${m}\n`), error: (m) => process.stderr.write(`${m}\n`) },
    });
    const out = join(root, 'dist', bundleFiles[failures]);
    await writeFile(out, code);
    process.stdout.write(`workflow bundle: ${out} (${Math.round(code.length / 1024)} KiB, failure messages ${failures})\n`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bundling workflows failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
