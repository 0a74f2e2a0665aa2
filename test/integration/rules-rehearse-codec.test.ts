import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { JobHarness } from '../helpers/job-harness';
import { submitCallUpdate } from '../../workflows/messages';

/** With the payload codec, histories hold no plaintext: the rehearsal reads them with the installation's keys. */

let h: JobHarness;
let rules: string;
beforeAll(async () => {
  h = await JobHarness.create({ rules: { version: 1, rules: [] }, codec: true });
  rules = join(h.dir, 'writes.yaml');
  writeFileSync(rules, 'version: 1\nrules:\n  - { id: approve-writes, version: 1, name: Writes need approval, scope: { tools: [fs_write] }, action: request_approval }\n');
});
afterAll(async () => h.close());

test('encrypted histories are decoded: the calls and their arguments are the ones the gate saw', async () => {
  const jobId = `codec-${Date.now()}`;
  await h.start({
    jobId,
    script: { turns: [{ tool_calls: [{ name: 'fs_write', arguments: { path: 'secret-plan.txt', content: 's' } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] },
  });
  await expect(h.result(jobId)).resolves.toMatchObject({ status: 'completed' });
  // Read without the codec, the history shows no path: it really is encrypted.
  const raw = historyToJSON(await h.env.client.workflow.getHandle(jobId).fetchHistory());
  const texts = [raw, ...[...raw.matchAll(/"data":\s*"([A-Za-z0-9+/=]+)"/g)].map((m) => Buffer.from(m[1] ?? '', 'base64').toString('latin1'))];
  expect(texts.some((t) => t.includes('secret-plan.txt'))).toBe(false);

  let out = await h.cli(['rules', 'rehearse', '--rules', rules, '--job', jobId, '--json']);
  // Visibility is eventually consistent.
  for (let i = 0; i < 50 && out.code !== 0; i++) {
    await new Promise((r) => setTimeout(r, 200));
    out = await h.cli(['rules', 'rehearse', '--rules', rules, '--job', jobId, '--json']);
  }
  expect(out.code).toBe(0);
  const report = JSON.parse(out.stdout) as { changes: Array<{ toolName: string; args: { path: string }; change: string }>; skipped: unknown[] };
  expect(report.skipped).toEqual([]);
  expect(report.changes).toEqual([
    expect.objectContaining({ toolName: 'fs_write', args: { path: join(h.root, 'secret-plan.txt'), content: 's', mode: 'create' }, change: 'allowed → needs approval' }),
  ]);
}, 90_000);

test('secrets in the recorded arguments are masked in the report, text and JSON', async () => {
  const secret = 'hunter2-Zq9Wv7';
  const jobId = `secret-${Date.now()}`;
  await h.start({
    jobId,
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_write', arguments: { path: 'env.sh', content: `export DB_PASSWORD=${secret}\n` } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
      ],
    },
  });
  await expect(h.result(jobId)).resolves.toMatchObject({ status: 'completed' });
  let text = await h.cli(['rules', 'rehearse', '--rules', rules, '--job', jobId]);
  for (let i = 0; i < 50 && text.code !== 0; i++) {
    await new Promise((r) => setTimeout(r, 200));
    text = await h.cli(['rules', 'rehearse', '--rules', rules, '--job', jobId]);
  }
  const json = await h.cli(['rules', 'rehearse', '--rules', rules, '--job', jobId, '--json']);
  expect(text.stdout).toContain('env.sh');
  expect(text.stdout).toContain('allowed → needs approval');
  expect(JSON.parse(json.stdout)).toMatchObject({ changes: [expect.objectContaining({ toolName: 'fs_write' })] });
  for (const out of [text.stdout, json.stdout]) expect(out).not.toContain(secret);
}, 90_000);

test('a client-driven job: its submitCall inputs are encrypted too, and read with the same keys', async () => {
  const jobId = `codec-client-${Date.now()}`;
  const { handle } = await h.start({ jobId, script: { turns: [] }, input: { driver: 'client', requester: 'claude' } });
  const call = { callKey: 'codec-write-1', toolName: 'fs_write', args: { path: 'client-secret-plan.txt', content: 's' } };
  expect(await handle.executeUpdate(submitCallUpdate, { args: [call] })).toMatchObject({ status: 'answered', isError: false });
  await handle.cancel();
  const raw = historyToJSON(await handle.fetchHistory());
  const texts = [raw, ...[...raw.matchAll(/"data":\s*"([A-Za-z0-9+/=]+)"/g)].map((m) => Buffer.from(m[1] ?? '', 'base64').toString('latin1'))];
  expect(raw).toContain('submitCall');
  expect(texts.some((t) => t.includes('client-secret-plan.txt'))).toBe(false);

  let out = await h.cli(['rules', 'rehearse', '--rules', rules, '--job', jobId, '--json']);
  for (let i = 0; i < 50 && out.code !== 0; i++) {
    await new Promise((r) => setTimeout(r, 200));
    out = await h.cli(['rules', 'rehearse', '--rules', rules, '--job', jobId, '--json']);
  }
  expect(out.code).toBe(0);
  const report = JSON.parse(out.stdout) as { calls: number; changes: Array<{ callId: string; args: { path: string }; change: string }>; skipped: unknown[] };
  expect(report.skipped).toEqual([]);
  expect(report.calls).toBe(1);
  expect(report.changes).toEqual([expect.objectContaining({ callId: 'codec-write-1', args: expect.objectContaining({ path: join(h.root, 'client-secret-plan.txt') }), change: 'allowed → needs approval' })]);
}, 90_000);
