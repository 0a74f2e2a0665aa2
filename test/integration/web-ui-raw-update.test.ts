import { createPrivateKey, sign } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { chromium, type Browser, type Page } from 'playwright-core';
import { type DecisionPayload } from '../../core/approval/approvals';
import { decisionSigningText } from '../../core/approval/decision-check';
import type { AgentJobStateView, PendingRequestView } from '../../core/job/job-view';
import { startDemo, type DemoStack } from '../helpers/dev-stack';
import { repoRoot } from '../helpers/processes';
import { stateQuery } from '../../workflows/messages';

/** Debian's chromium (`.ci/run` installs it); AIRLOCK_TEST_CHROMIUM points elsewhere. */
const chromiumPath = process.env.AIRLOCK_TEST_CHROMIUM ?? '/usr/bin/chromium';

let dir: string;
let demo: DemoStack | undefined;
let browser: Browser | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-ui-update-'));
});
afterAll(async () => {
  await browser?.close();
  await demo?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface UpdateAnswer {
  readonly outcome?: {
    readonly success?: unknown;
    readonly failure?: {
      readonly message?: string;
      readonly encodedAttributes?: { readonly data?: string };
      readonly applicationFailureInfo?: { readonly type?: string; readonly details?: { readonly payloads?: ReadonlyArray<{ readonly data?: string }> } };
    };
  };
}

const fromBase64Json = (data: string | undefined): unknown => (data === undefined ? undefined : JSON.parse(Buffer.from(data, 'base64').toString('utf8')));

/**
 * Types `payload` into the Web UI's "Send an Update" box for update `decide`
 * and submits it, as a reviewer with only a browser would; returns what the
 * server answered the UI.
 */
async function sendThroughUpdateBox(page: Page, url: string, payload: DecisionPayload): Promise<UpdateAnswer> {
  await page.goto(url, { waitUntil: 'load' });
  await page.getByRole('button', { name: 'More Actions' }).first().click();
  await page.getByRole('menuitem', { name: 'Send an Update' }).click();
  const dialog = page.locator('dialog[open]');
  await dialog.getByTestId('update-select-button').click();
  await dialog.getByRole('option', { name: /^decide/ }).click();
  await dialog.locator('.cm-content').click();
  await page.keyboard.insertText(JSON.stringify(payload));
  // Leave the editor first: a click while it has focus only ends the edit.
  await page.keyboard.press('Tab');
  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && /\/workflows\/[^/]+\/update\/decide/.test(r.url())),
    dialog.getByRole('button', { name: 'Submit' }).click(),
  ]);
  return (await answer.json()) as UpdateAnswer;
}

test("with signatures required, a decision typed into the Web UI's raw update box without a signature is rejected; the file stays", async () => {
  expect(existsSync(chromiumPath)).toBe(true);
  demo = await startDemo(join(dir, 'data'));
  const { jobId, dev } = demo;
  // `airlock dev` made the local user a reviewer with a key; the built-in rules want decisions signed with it.
  const [, reviewer = '', keyFile = ''] = /created the signing key of reviewer (\S+) \((.+?)\)/.exec(dev.output()) ?? [];
  expect(existsSync(keyFile)).toBe(true);

  const connection = await Connection.connect({ address: demo.address });
  const state = () => new Client({ connection }).workflow.getHandle(jobId).query<AgentJobStateView>(stateQuery);
  try {
    let request: PendingRequestView | undefined;
    for (let i = 0; i < 200 && request === undefined; i++) {
      request = (await state().catch(() => undefined))?.pending[0];
      if (request === undefined) await new Promise((r) => setTimeout(r, 300));
    }
    if (request === undefined) throw new Error('the demo job never parked');
    expect(request).toMatchObject({ toolName: 'fs_delete', ruleId: 'approve-deletes' });
    const observed = request.observed[0];
    const file = observed !== undefined && 'path' in observed ? observed.path : '';
    expect(existsSync(file)).toBe(true);

    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox'] });
    const page = await browser.newPage({ viewport: { width: 1400, height: 1400 } });
    const url = `${demo.webUi}/namespaces/default/workflows/${jobId}`;
    // Exactly the request's fingerprint and nonce, under the reviewer's own name: all a pasted decision can carry.
    const unsigned: DecisionPayload = { requestId: request.requestId, fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve', reviewer };
    const answer = await sendThroughUpdateBox(page, url, unsigned);

    // The job's own check refused it, before it could enter history.
    const failure = answer.outcome?.failure;
    expect(failure?.applicationFailureInfo?.type).toBe('AirlockDecisionRejected');
    expect(failure?.applicationFailureInfo?.details?.payloads?.map((p) => fromBase64Json(p.data))).toEqual(['signature_required', 'validator']);
    // With the codec off, the reason is the failure's own message: the UI shows it, not "Encoded failure".
    expect(failure?.message).toMatch(/needs a signed decision/);
    expect(failure?.encodedAttributes).toBeUndefined();
    const dialog = page.locator('dialog[open]');
    await dialog.getByText(/needs a signed decision/).first().waitFor({ state: 'visible' });
    expect(await dialog.getByText('Encoded failure').count()).toBe(0);
    mkdirSync(join(repoRoot, 'test-output'), { recursive: true });
    await page.screenshot({ path: join(repoRoot, 'test-output', 'web-ui-raw-update-rejected.png') });

    const after = await state();
    expect(after.status).toBe('awaiting_approval');
    expect(after.pending.map((r) => [r.requestId, r.fingerprint, r.nonce])).toEqual([[request.requestId, request.fingerprint, request.nonce]]);
    expect(after.counters.toolCallsExecuted).toBe(2);
    expect(existsSync(file)).toBe(true);

    // The same box with the same decision signed by the reviewer's key is accepted: the signature alone made the difference.
    const signature = sign(null, Buffer.from(decisionSigningText(jobId, unsigned)), createPrivateKey(readFileSync(keyFile))).toString('base64');
    const accepted = await sendThroughUpdateBox(page, url, { ...unsigned, signature });
    expect(accepted.outcome?.failure).toBeUndefined();
    expect(fromBase64Json((accepted.outcome?.success as { payloads?: Array<{ data?: string }> } | undefined)?.payloads?.[0]?.data)).toMatchObject({
      requestId: request.requestId,
      status: 'approved',
    });
    let done = await state();
    for (let i = 0; i < 100 && done.status !== 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 300));
      done = await state();
    }
    expect(done).toMatchObject({ status: 'completed', pending: [] });
    expect(done.counters.toolCallsExecuted).toBe(3);
    expect(existsSync(file)).toBe(false);
  } finally {
    await connection.close();
  }
});
