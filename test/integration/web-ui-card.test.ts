import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { chromium, type Browser } from 'playwright-core';
import type { AgentJobStateView } from '../../core/job/job-view';
import { startDemo, type DemoStack } from '../helpers/dev-stack';
import { repoRoot } from '../helpers/processes';
import { stateQuery } from '../../workflows/messages';

/** Debian's chromium (`.ci/run` installs it); AIRLOCK_TEST_CHROMIUM points elsewhere. */
const chromiumPath = process.env.AIRLOCK_TEST_CHROMIUM ?? '/usr/bin/chromium';

let dir: string;
let demo: DemoStack | undefined;
let browser: Browser | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-ui-card-'));
});
afterAll(async () => {
  await browser?.close();
  await demo?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("the Web UI shows a parked job's approval card with every field and the exact command", async () => {
  expect(existsSync(chromiumPath)).toBe(true);
  demo = await startDemo(join(dir, 'data'));
  const { jobId } = demo;

  // The request id the card must name, from the job itself.
  const connection = await Connection.connect({ address: demo.address });
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
  await page.goto(`${demo.webUi}/namespaces/default/workflows/${jobId}`, { waitUntil: 'load' });
  await page.getByText('User Metadata').first().click();
  // The card is Markdown the UI renders in a frame of its own: read every frame.
  const command = `npx airlock approve ${jobId} \\\n  --request ${requestId}`;
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
  expect(text).toMatch(/target \S*old-backup\.tar: file, 256 KiB/);
  expect(text).toMatch(/rule: approve-deletes v\d+ — /);
  // The UI renders the apostrophe typographically.
  expect(text).toMatch(/the model.s reason: The note says old-backup\.tar is superseded\. Deleting it needs approval\./);
  expect(text).toMatch(/may edit: .*\(this call only; editing creates a new fingerprint\)/);
  // Absolute times: the details are written once, and read later.
  expect(text).toMatch(/requested by \S+ at \d{4}-\d\d-\d\d \d\d:\d\d UTC; expires \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
  expect(text).not.toMatch(/waiting \d+s/);
  expect(text).toContain(`request ${requestId}, fingerprint `);
  // Commands wrap where a shell reads them the same, so the box clips none of them.
  expect(text).toContain(command);
  expect(text).toContain(`npx airlock deny ${jobId} \\\n  --request ${requestId} \\\n  --reason TEXT`);
  const boxes = await Promise.all(
    page.frames().map((f) => f.evaluate('[...document.querySelectorAll("pre")].map((p) => [p.scrollWidth, p.clientWidth])').catch(() => [])),
  );
  const widths = boxes.flat() as Array<[number, number]>;
  expect(widths.length).toBeGreaterThan(0);
  for (const [scroll, client] of widths) expect(scroll).toBeLessThanOrEqual(client + 1);
  // `airlock dev` serves the approval page: the card links to this request there.
  const links = (await Promise.all(page.frames().map((f) => f.evaluate('[...document.querySelectorAll("a")].map((a) => a.href)').catch(() => [])))).flat() as string[];
  expect(links).toContain(`${demo.inbox}/jobs/${encodeURIComponent(jobId)}/requests/${requestId}`);
});
