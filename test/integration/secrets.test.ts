import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { JobHarness } from '../helpers/job-harness';
import type { Spawned } from '../helpers/processes';

/**
 * Canary secrets, each shaped like a real one, planted where a model, a
 * file or a person would put them. None may show on any surface people
 * see: the audit log, a worker's log, the Web UI summary and details,
 * `pending`/`show` (text and JSON), the job's result, the nonce store.
 */
const canaries = {
  goal: 'sk-canaryGOAL0123456789',
  model: 'canaryMODEL0123456789',
  fileName: 'canaryFILE0123',
  args: 'ghp_canaryARGS0123456789abcdef',
  fileContent: 'xoxb-canaryREAD-0123456789',
  summary: 'canarySUMMARY01',
};
const marks = ['canaryGOAL', 'canaryMODEL', 'canaryFILE', 'canaryARGS', 'canaryREAD', 'canarySUMMARY'];

describe.each([
  ['without a payload codec', false],
  ['with the payload codec on', true],
])('%s', (_label, codec) => {
  let h: JobHarness;
  let tools: Spawned;

  beforeAll(async () => {
    h = await JobHarness.create({
      codec,
      toolsInProcess: false,
      rules: {
        version: 1,
        rules: [{ id: 'approve-deletes', version: 1, name: 'Deleting needs approval', scope: { categories: ['delete'] }, action: 'request_approval' }],
      },
    });
    tools = h.spawnToolsWorker({ AIRLOCK_LOG_LEVEL: 'debug' });
    await tools.waitFor(/workers polling airlock-tools/);
  });
  afterAll(async () => h.close());

  function leaked(surface: string, text: string): string[] {
    return marks.filter((m) => text.includes(m)).map((m) => `${m} in ${surface}`);
  }

  test('canary secrets reach no surface people see', async () => {
    writeFileSync(join(h.root, 'creds.txt'), `slack: ${canaries.fileContent}\n`);
    const secretName = `token=${canaries.fileName}.txt`;
    h.replay.setScript({
      turns: [
        {
          content: `Logging in with Bearer ${canaries.model}.`,
          tool_calls: [
            { name: 'fs_read', arguments: { path: 'creds.txt' } },
            { name: 'fs_write', arguments: { path: secretName, content: `key ${canaries.args}` } },
          ],
        },
        { tool_calls: [{ name: 'fs_delete', arguments: { path: secretName } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: `done, password: ${canaries.summary}` } }] },
      ],
    });
    const { jobId } = await h.airlock.startJob({ goal: `clean up, log in with ${canaries.goal}`, requester: 'tester' });
    await h.waitForPending(jobId);
    // As the Web UI shows it: decoded (through the codec server when the codec is on).
    const handle = h.airlock.client.workflow.getHandle(jobId);
    const found: string[] = [];

    for (const args of [['pending'], ['pending', '--json'], ['show', jobId], ['show', jobId, '--json']]) {
      const out = await h.cli(args);
      expect(out.code).toBe(0);
      found.push(...leaked(`airlock ${args.join(' ')}`, out.stdout + out.stderr));
    }
    const described = await handle.describe();
    found.push(...leaked('Web UI summary', (await described.staticSummary()) ?? ''));
    expect(JSON.stringify(described.memo)).toContain('fs_delete');
    found.push(...leaked('Web UI memo', JSON.stringify(described.memo)));
    const metadata = await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toContain('Waiting for approval');
    found.push(...leaked('Web UI current details', metadata.currentDetails));

    expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice', reason: 'ok' })).toMatchObject({ accepted: true });
    const result = await h.result(jobId);
    expect(result).toMatchObject({ status: 'completed' });
    found.push(...leaked('job result', JSON.stringify(result)));
    const after = await h.cli(['show', jobId, '--json']);
    found.push(...leaked('airlock show after completion', after.stdout));
    found.push(...leaked('audit log', JSON.stringify(h.audit(jobId))));
    found.push(...leaked('tools worker log', tools.output()));
    // The store and its write-ahead log: recent rows may not be in the main file yet.
    const store = ['nonces.sqlite', 'nonces.sqlite-wal'].map((f) => join(h.dir, 'tools', f)).filter((f) => existsSync(f));
    const storeBytes = store.map((f) => readFileSync(f).toString('latin1')).join('');
    expect(storeBytes).toContain(jobId);
    found.push(...leaked('nonce store', storeBytes));
    expect(found).toEqual([]);

    // The secrets were there to find: the model did read the file, and the write did happen.
    expect(h.toolResults(jobId).get('call_0_0')).toContain(canaries.fileContent);
    expect(h.audit(jobId, 'tool_executed').length).toBeGreaterThanOrEqual(3);

    // What the server stores, read without the codec: plaintext without one, nothing readable with it.
    const raw = historyToJSON(await h.env.client.workflow.getHandle(jobId).fetchHistory());
    if (codec) expect(leakedFromHistory(raw)).toEqual([]);
    else expect(leakedFromHistory(raw).length).toBeGreaterThan(0);
  });
});

/** History JSON holds payload data base64-encoded: look for the canaries in every payload's decoded bytes too. */
function leakedFromHistory(json: string): string[] {
  const texts = [json];
  for (const m of json.matchAll(/"data":\s*"([A-Za-z0-9+/=]+)"/g)) texts.push(Buffer.from(m[1] ?? '', 'base64').toString('latin1'));
  return marks.filter((mark) => texts.some((t) => t.includes(mark)));
}
