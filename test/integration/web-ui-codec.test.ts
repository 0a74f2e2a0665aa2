import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { chromium, type Browser } from 'playwright-core';
import { startDemo, type DemoStack } from '../helpers/dev-stack';
import { repoRoot } from '../helpers/processes';

/** Debian's chromium (`.ci/run` installs it); AIRLOCK_TEST_CHROMIUM points elsewhere. */
const chromiumPath = process.env.AIRLOCK_TEST_CHROMIUM ?? '/usr/bin/chromium';

let dir: string;
let demo: DemoStack | undefined;
let browser: Browser | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-ui-'));
});
afterAll(async () => {
  await browser?.close();
  await demo?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('with the codec on, the Web UI shows a parked job decoded through the codec server, while the server stores no plaintext', async () => {
  expect(existsSync(chromiumPath)).toBe(true);
  const stack = await startDemo(join(dir, 'data'), ['--codec']);
  demo = stack;
  const { jobId } = stack;
  expect(stack.dev.output()).toMatch(/Payloads\s+encrypted/);

  // Parked: read back without the codec, the server holds no readable goal, card or path.
  const connection = await Connection.connect({ address: stack.address });
  const raw = new Client({ connection });
  // Search attributes are never encoded: the status says when the job has parked.
  let plain: string[] = [];
  for (let i = 0; i < 200 && !plain.some((t) => t.includes('awaiting_approval')); i++) {
    const history = historyToJSON(await raw.workflow.getHandle(jobId).fetchHistory());
    plain = [history, ...[...history.matchAll(/"data":\s*"([A-Za-z0-9+/=]+)"/g)].map((m) => Buffer.from(m[1] ?? '', 'base64').toString('latin1'))];
    await new Promise((r) => setTimeout(r, 300));
  }
  expect(plain.some((t) => t.includes('awaiting_approval'))).toBe(true);
  await connection.close();
  for (const text of ['Free some space', 'old-backup.tar', 'Waiting for approval']) expect(plain.some((t) => t.includes(text))).toBe(false);

  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const decoded: string[] = [];
  page.on('requestfinished', (r) => {
    if (r.url().startsWith(`${stack.codecUrl}/`) && r.url().endsWith('/decode')) decoded.push(r.url());
  });
  await page.goto(`${stack.webUi}/namespaces/default/workflows/${jobId}`, { waitUntil: 'load' });
  await page.getByText('User Metadata').first().click();
  // The card is Markdown the UI renders in a frame of its own: read every frame.
  let text = '';
  for (let i = 0; i < 120 && !text.includes('Waiting for approval (1)'); i++) {
    await page.waitForTimeout(500);
    const frames = await Promise.all(page.frames().map((f) => f.evaluate('document.body ? document.body.innerText : ""').catch(() => '')));
    text = frames.map(String).join('\n');
  }
  expect(text).toContain('Waiting for approval (1)');
  expect(text).toContain('fs_delete on');
  expect(text).toMatch(/old-backup\.tar: file, 256 KiB/);
  expect(text).toContain('approve-deletes');
  expect(text).toContain('airlock job: Free some space');
  expect(decoded.length).toBeGreaterThan(0);
  mkdirSync(join(repoRoot, 'test-output'), { recursive: true });
  await page.screenshot({ path: join(repoRoot, 'test-output', 'web-ui-codec.png') });
});
