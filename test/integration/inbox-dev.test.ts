import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Spawned } from '../helpers/processes';
import { devEnv, startDev } from '../helpers/dev-stack';
import { recordingServer, type RecordingServer } from '../helpers/recording-server';

let dir: string;
let dev: Spawned | undefined;
let endpoint: RecordingServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-inbox-dev-'));
  endpoint = await recordingServer('127.0.0.1', (_req, res) => res.end('ok'));
});
afterAll(async () => {
  if (dev?.child.pid !== undefined) {
    process.kill(-dev.child.pid, 'SIGINT');
    await dev.exited();
  }
  await endpoint.close();
  rmSync(dir, { recursive: true, force: true });
});

test('airlock dev serves the approval page and its notifications link to the parked request there', async () => {
  const env: NodeJS.ProcessEnv = { ...(await devEnv(join(dir, 'data'))), AIRLOCK_NOTIFY_URLS: `generic:${endpoint.origin}/notify` };
  const port = Number(String(env.AIRLOCK_INBOX_LISTEN).split(':')[1]);
  dev = await startDev(env, ['--demo']);
  expect(dev.output()).toContain(`Approval page   http://localhost:${port} (register a passkey: npx airlock reviewer add NAME --passkey)`);

  // The demo parks on a delete; its approval_requested notice links to this page.
  let link: string | null = null;
  for (let i = 0; i < 300 && link === null; i++) {
    const notice = endpoint.received
      .map((r) => JSON.parse(r.body) as { event: string; links: { approval: string | null } })
      .find((n) => n.event === 'approval_requested');
    link = notice?.links.approval ?? null;
    if (link === null) await new Promise((r) => setTimeout(r, 200));
  }
  expect(link).toMatch(new RegExp(`^http://localhost:${port}/jobs/demo-[^/]+/requests/[^/]+$`));
  const card = await fetch(link ?? '');
  expect(card.status).toBe(200);
  const text = await card.text();
  expect(text).toContain('old-backup.tar');
  expect(text).toContain('id="approve"');
});
