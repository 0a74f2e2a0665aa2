import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { chromium, type Browser } from 'playwright-core';
import { freePort } from '../../client/dev/ports';
import type { AgentJobStateView } from '../../core/job-view';
import { repoRoot, spawnNode, type Spawned } from '../helpers/processes';
import { testServer } from '../helpers/temporal-env';
import { stateQuery } from '../../workflows/messages';

/** Debian's chromium (`.ci/run` installs it); AIRLOCK_TEST_CHROMIUM points elsewhere. */
const chromiumPath = process.env.AIRLOCK_TEST_CHROMIUM ?? '/usr/bin/chromium';

let dir: string;
let dev: Spawned | undefined;
let browser: Browser | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-ui-card-'));
});
afterAll(async () => {
  await browser?.close();
  if (dev?.child.pid !== undefined) {
    process.kill(-dev.child.pid, 'SIGINT');
    await dev.exited();
  }
  rmSync(dir, { recursive: true, force: true });
});

test("the Web UI shows a parked job's approval card with every field and the exact command", async () => {
  expect(existsSync(chromiumPath)).toBe(true);
  const [grpc, ui] = [await freePort(), await freePort()];
  dev = spawnNode(
    'bin/airlock.js',
    ['dev', '--demo'],
    {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_ADDRESS: `127.0.0.1:${grpc}`,
      AIRLOCK_UI_PORT: String(ui),
      AIRLOCK_DATA_DIR: join(dir, 'data'),
      TEMPORAL_CLI: testServer.cli,
    },
    { detached: true },
  );
  await dev.waitFor(/Demo job (demo-\S+) started/);
  const jobId = /Demo job (demo-\S+) started/.exec(dev.output())?.[1] ?? '';

  // The request id the card must name, from the job itself.
  const connection = await Connection.connect({ address: `127.0.0.1:${grpc}` });
  let requestId = '';
  try {
    const handle = new Client({ connection }).workflow.getHandle(jobId);
    for (let i = 0; i < 200 && requestId === ''; i++) {
      const state = await handle.query<AgentJobStateView>(stateQuery).catch(() => undefined);
      requestId = state?.pending[0]?.requestId ?? '';
      if (requestId === '') await new Promise((r) => setTimeout(r, 300));
    }
  } finally {
    await connection.close();
  }
  expect(requestId).toMatch(/\S/);

  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1400 } });
  await page.goto(`http://127.0.0.1:${ui}/namespaces/default/workflows/${jobId}`, { waitUntil: 'load' });
  await page.getByText('User Metadata').first().click();
  // The card is Markdown the UI renders in a frame of its own: read every frame.
  const command = `npx airlock approve ${jobId} --request ${requestId}`;
  let text = '';
  for (let i = 0; i < 120 && !text.includes(command); i++) {
    await page.waitForTimeout(500);
    const frames = await Promise.all(page.frames().map((f) => f.evaluate('document.body ? document.body.innerText : ""').catch(() => '')));
    text = frames.map(String).join('\n');
  }
  mkdirSync(join(repoRoot, 'test-output'), { recursive: true });
  await page.screenshot({ path: join(repoRoot, 'test-output', 'web-ui-card.png'), fullPage: true });

  expect(text).toContain('Waiting for approval (1)');
  expect(text).toMatch(/fs_delete on \S*old-backup\.tar/);
  expect(text).toMatch(/target \S*old-backup\.tar: file, 262144 bytes/);
  expect(text).toMatch(/rule: approve-deletes v\d+ — /);
  // The UI renders the apostrophe typographically.
  expect(text).toMatch(/the model.s reason: The note says old-backup\.tar is superseded\. Deleting it needs approval\./);
  expect(text).toMatch(/may edit: .*\(this call only; editing creates a new fingerprint\)/);
  expect(text).toMatch(/requested by \S+, waiting \d+s, expires in \d+h/);
  expect(text).toContain(`request ${requestId}, fingerprint `);
  expect(text).toContain(command);
  expect(text).toContain(`npx airlock deny ${jobId} --request ${requestId} --reason TEXT`);
});
