import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import type { InboxServer } from '../../servers/inbox/inbox-server';
import { readReviewerKeysFile } from '../../host/keys/reviewer-keys-file';
import { decideOnCard, outputDir, startInboxBrowser, type InboxBrowser } from '../helpers/inbox-browser';
import type { JobHarness } from '../helpers/job-harness';

let b: InboxBrowser;
let h: JobHarness;
let inbox: InboxServer;
let port: number;
let keysFile: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let cdp: CDPSession;
let authenticatorId: string;
/** The browser's answer that approved the first delete, kept to replay on another request. */
let usedAssertion: unknown;

beforeAll(async () => {
  b = await startInboxBrowser();
  ({ h, inbox, port, keysFile, browser, context, page, cdp, authenticatorId } = b);
});

afterAll(async () => {
  await b?.close();
});

/** A job parked on one call (with the default rules), its request id, and what the model says after. */
async function park(name: string, call: { name: string; arguments: Record<string, unknown> }): Promise<{ jobId: string; requestId: string }> {
  const { jobId } = await h.start({
    jobId: `inbox-${name}-${Date.now()}`,
    goal: `tidy up (${name})`,
    script: {
      turns: [
        { content: `The file ${name} looks unused, so I propose this.`, tool_calls: [call] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
      ],
    },
  });
  const state = await h.waitForPending(jobId);
  return { jobId, requestId: state.pending[0]?.requestId ?? '' };
}

function cardUrl(jobId: string, requestId: string): string {
  return `${inbox.url}/jobs/${encodeURIComponent(jobId)}/requests/${encodeURIComponent(requestId)}`;
}

/** Decides on the card page (this test's page unless another is named) and returns the result line the page shows. */
function decide(button: 'approve' | 'deny', fill: { reason?: string; edits?: Record<string, string> } = {}, on: Page = page): Promise<string> {
  return decideOnCard(on, button, fill);
}

/** The reviewer name this browser remembers (from registering, or from identifying with the passkey). */
async function rememberedReviewer(on: Page = page): Promise<unknown> {
  return on.evaluate('localStorage.getItem("airlock.passkeyReviewer")');
}

/** In the page (no DOM types here): each selector's text/background contrast ratio, WCAG's formula. */
const contrastScript = (selectors: readonly string[]) => `(() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = (c) => {
    const [r = 0, g = 0, b = 0] = rgb(c).slice(0, 3).map((v) => v / 255).map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const background = (el) => {
    for (let at = el; at; at = at.parentElement) {
      const c = getComputedStyle(at).backgroundColor;
      const parts = rgb(c);
      if (parts.length === 3 || (parts[3] || 0) > 0) return c;
    }
    return 'rgb(255, 255, 255)';
  };
  return ${JSON.stringify(selectors)}.map((selector) => {
    const el = document.querySelector(selector);
    const a = lum(getComputedStyle(el || document.body).color);
    const b = lum(background(el));
    return { selector, found: el !== null, ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05) };
  });
})()`;

/** What the card page shows as text, the sticky bar included. */
const CARD_TEXT = ['#approve', '#deny', '#reason-toggle', '#bar', '#bar label', '#reason', '#who', '#who strong', '#not-you', '#when time', 'h1', '.call', '.detail > summary', '.detail-body', '.details h2', 'label'];
const LIST_TEXT = ['h1', '#list-status', '.row-link', '.row-meta', '.row-meta time'];

/** Every selector's text meets WCAG AA (4.5:1) in the light and the dark scheme. */
async function expectContrast(on: Page, selectors: readonly string[]): Promise<void> {
  for (const colorScheme of ['light', 'dark'] as const) {
    await on.emulateMedia({ colorScheme });
    const ratios = await on.evaluate<Array<{ selector: string; found: boolean; ratio: number }>>(contrastScript(selectors));
    for (const r of ratios) expect({ ...r, colorScheme, ratio: r.ratio >= 4.5 }).toEqual({ selector: r.selector, colorScheme, found: true, ratio: true });
  }
  await on.emulateMedia({ colorScheme: 'light' });
}

function toolRuns(jobId: string, toolName: string) {
  return h.audit(jobId, 'tool_executed').filter((e) => e.data.toolName === toolName);
}

describe('the approval inbox in a browser with a passkey', () => {
  test('a reviewer registers a passkey from the invite link; the link works once', async () => {
    const added = await h.cli(['reviewer', 'add', 'alice', '--passkey'], { AIRLOCK_INBOX_LISTEN: `127.0.0.1:${port}` });
    expect(added.code).toBe(0);
    // A localhost link works on this machine only: the command says how a phone gets there.
    expect(added.stderr).toMatch(/^airlock reviewer add: http:\/\/localhost:\d+ opens only on this machine; for a phone, serve the approval page over HTTPS .*AIRLOCK_APPROVAL_PAGE_URL/);
    const link = /(http:\/\/localhost:\d+\/register#[A-Za-z0-9_-]+)/.exec(added.stdout)?.[1] ?? '';
    expect(link).toContain(`http://localhost:${port}/register#`);

    await page.goto(link);
    await page.locator('#register:not([disabled])').waitFor();
    await expect(page.locator('#register-for').textContent()).resolves.toContain('reviewer alice');
    await page.click('#register');
    await page.locator('#result[data-state="accepted"]').waitFor({ timeout: 30_000 });
    expect(await page.textContent('#result')).toContain('Passkey registered for alice');
    // The token left the address bar; the browser remembers who registered, so the page need not ask.
    expect(page.url()).not.toContain('#');
    await expect(rememberedReviewer()).resolves.toBe('alice');

    const passkeys = readReviewerKeysFile(keysFile).alice?.passkeys ?? [];
    expect(passkeys).toHaveLength(1);
    expect(passkeys[0]).toMatchObject({ rpId: 'localhost', origin: `http://localhost:${port}` });
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(credentials.map((c) => Buffer.from(c.credentialId, 'base64').toString('base64url'))).toEqual([passkeys[0]?.id]);

    // Used once: the same link is refused, and nothing is added (a fresh load, not a jump within the page).
    await page.goto('about:blank');
    await page.goto(link);
    await page.locator('#register-for[data-state="error"]').waitFor();
    expect(await page.textContent('#register-for')).toContain('already used');
    expect(readReviewerKeysFile(keysFile).alice?.passkeys).toHaveLength(1);
  });

  test('approve a parked delete from the list: the file is deleted once', async () => {
    writeFileSync(join(h.root, 'victim.txt'), 'x'.repeat(2048));
    const { jobId, requestId } = await park('victim.txt', { name: 'fs_delete', arguments: { path: 'victim.txt' } });

    await page.goto(`${inbox.url}/`);
    const row = page.locator(`li.row[data-job="${jobId}"]`);
    // Listing comes from visibility, which may lag a moment: the page refreshes itself.
    await row.waitFor({ timeout: 30_000 });
    // A compact row: what will happen, the rule, how long it waits.
    expect(await row.textContent()).toMatch(/^\s*Delete victim\.txt \(2 KiB\) in root — cannot be undone\s+approve-deletes · waiting \d+s · expires in 23h\s*$/);
    await expectContrast(page, LIST_TEXT);
    await page.screenshot({ path: join(outputDir, 'inbox-list.png'), fullPage: true });

    await row.getByRole('link', { name: 'Delete victim.txt (2 KiB) in root — cannot be undone' }).click();
    await page.waitForURL(cardUrl(jobId, requestId));
    expect(await page.textContent('h1')).toBe('Delete victim.txt (2 KiB) in root — cannot be undone');
    // Why, in the tools side's words: the root keeps nothing for undo.
    expect(await page.textContent('#undo-why')).toMatch(/^Cannot be undone: .*root is not set up for undo\.$/);
    expect(await page.textContent('#who')).toBe('Deciding as alice · not you?');
    const text = (await page.textContent('main')) ?? '';
    expect(text).toContain('fs_delete');
    expect(text).toMatch(/victim\.txt: file, 2 KiB/);
    expect(text).toContain('approve-deletes v2: Deleting files needs approval');
    expect(text).toContain('The file victim.txt looks unused, so I propose this.');
    expect(text).toMatch(/waiting \d+s/);
    expect(text).toMatch(/expires in 23h/);
    // The first screen, as the reviewer sees it (a full-page capture would show the fixed bar mid-page).
    await page.screenshot({ path: join(outputDir, 'inbox-card.png') });

    page.on('request', (r) => {
      if (r.url().endsWith('/api/decision') && usedAssertion === undefined) usedAssertion = (JSON.parse(r.postData() ?? '{}') as { response: unknown }).response;
    });
    const shown = await decide('approve', { reason: 'superseded' });
    expect(shown).toContain('Approved');

    await h.waitFor(jobId, (s) => s.status === 'completed', 'completion');
    expect(existsSync(join(h.root, 'victim.txt'))).toBe(false);
    expect(toolRuns(jobId, 'fs_delete')).toHaveLength(1);
    expect(h.audit(jobId, 'approval_decided')).toEqual([expect.objectContaining({ data: expect.objectContaining({ decision: 'approve', reviewer: 'alice', signed: true, signedWith: 'passkey' }) })]);
    expect(usedAssertion).toBeDefined();

    // Decided here: the card leaves the list.
    await page.goto(`${inbox.url}/`);
    await page.locator(`li.row[data-job="${jobId}"]`).waitFor({ state: 'detached', timeout: 30_000 });
  });

  test('edit an editable field: before and after are shown, and the edited call runs', async () => {
    const file = join(h.root, 'open.txt');
    writeFileSync(file, 'config');
    // A list open in another tab shows the new request without a reload, and drops it once decided.
    const list = await context.newPage();
    await list.goto(`${inbox.url}/`);
    const { jobId, requestId } = await park('open.txt', { name: 'fs_chmod', arguments: { path: 'open.txt', mode: '777' } });
    await list.locator(`li.row[data-job="${jobId}"]`).waitFor({ timeout: 30_000 });
    await page.goto(cardUrl(jobId, requestId));
    await page.fill('#edit-mode', '600');
    await expect(page.textContent('#edit-changes')).resolves.toContain('mode: 777 → 600');
    expect(await page.textContent('#approve')).toBe('Approve with edits');
    const shown = await decide('approve');
    expect(shown).toContain('Approved');
    expect(shown).toContain('Edited call, new fingerprint');

    await h.waitFor(jobId, (s) => s.status === 'completed', 'completion');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    await list.locator(`li.row[data-job="${jobId}"]`).waitFor({ state: 'detached', timeout: 30_000 });
    await list.close();
    const runs = toolRuns(jobId, 'fs_chmod');
    expect(runs).toHaveLength(1);
    expect(runs[0]?.data.fingerprint).toBe(h.audit(jobId, 'approval_decided')[0]?.data.editedFingerprint);
  });

  test('deny with a reason: nothing runs and the model is told why', async () => {
    writeFileSync(join(h.root, 'keep.txt'), 'only copy');
    const { jobId, requestId } = await park('keep.txt', { name: 'fs_delete', arguments: { path: 'keep.txt' } });
    await page.goto(cardUrl(jobId, requestId));
    // On a phone Deny first opens the reason in the bar, focused; nothing is sent.
    expect(await page.isVisible('#reason')).toBe(false);
    await page.click('#deny');
    await expect(page.evaluate('document.activeElement && document.activeElement.id')).resolves.toBe('reason');
    expect(await page.textContent('#deny')).toBe('Deny with this reason');
    // A denial needs a reason: the page says so before any passkey prompt.
    await page.click('#deny');
    await page.locator('#result[data-state="error"]').waitFor();
    expect(await page.textContent('#result')).toContain('Say why you deny it');

    const shown = await decide('deny', { reason: 'keep it: it is the only copy' });
    expect(shown).toContain('Denied');
    await h.waitFor(jobId, (s) => s.status === 'completed', 'completion');
    expect(existsSync(join(h.root, 'keep.txt'))).toBe(true);
    expect(toolRuns(jobId, 'fs_delete')).toHaveLength(0);
    expect([...h.toolResults(jobId).values()].join('\n')).toContain('keep it: it is the only copy');
    expect(h.audit(jobId, 'approval_decided')[0]?.data).toMatchObject({ decision: 'deny', reason: 'keep it: it is the only copy', signedWith: 'passkey' });
  });

  test('keyboard only: every control is labelled, focus is visible, and Tab then Enter approves', async () => {
    writeFileSync(join(h.root, 'kbd.txt'), 'k');
    const { jobId, requestId } = await park('kbd.txt', { name: 'fs_delete', arguments: { path: 'kbd.txt' } });
    await page.goto(cardUrl(jobId, requestId));
    expect(await page.getAttribute('html', 'lang')).toBe('en');
    // No name to type: the passkey says who decides.
    await expect(page.locator('input#reviewer').count()).resolves.toBe(0);
    // Found by their labels, as a screen reader announces them (the reason opens in the bar first).
    await expectContrast(page, ['#reason-toggle']);
    await page.getByRole('button', { name: 'Add reason' }).click();
    await page.getByLabel(/^Reason/).fill('checked from the keyboard');
    await expect(page.getByLabel(/^recursive/).count()).resolves.toBe(1);
    await expect(page.getByRole('button', { name: 'Approve' }).count()).resolves.toBe(1);
    await expect(page.getByRole('button', { name: 'Deny' }).count()).resolves.toBe(1);
    // From the reason field, Tab reaches Approve: no mouse needed.
    await page.focus('#reason');
    let focused = '';
    for (let i = 0; i < 10 && focused !== 'approve'; i++) {
      await page.keyboard.press('Tab');
      focused = String(await page.evaluate('document.activeElement ? document.activeElement.id : ""'));
    }
    expect(focused).toBe('approve');
    const outline = await page.evaluate<{ style: string; width: string }>(
      '(() => { const s = getComputedStyle(document.activeElement || document.body); return { style: s.outlineStyle, width: s.outlineWidth }; })()',
    );
    expect(outline.style).not.toBe('none');
    expect(outline.width).not.toBe('0px');
    // Text against its background meets WCAG AA (4.5:1), light and dark, for the controls, the bar and the card text.
    await expectContrast(page, CARD_TEXT);
    // Controls are at least 44 pixels tall.
    const small = await page.evaluate<string[]>(
      `Array.from(document.querySelectorAll('button, summary')).filter((el) => el.getClientRects().length > 0 && el.getBoundingClientRect().height < 44).map((el) => el.id || el.textContent)`,
    );
    expect(small).toEqual([]);
    await page.keyboard.press('Enter');
    await page.locator('#result[data-state="accepted"]').waitFor({ timeout: 60_000 });
    await h.waitFor(jobId, (st) => st.status === 'completed', 'completion');
    expect(existsSync(join(h.root, 'kbd.txt'))).toBe(false);
  });

  test('a browser that remembers no name identifies the reviewer with the passkey: two prompts for the first decision, then one', async () => {
    const added = await h.cli(['reviewer', 'add', 'bob', '--passkey'], { AIRLOCK_INBOX_LISTEN: `127.0.0.1:${port}` });
    expect(added.code).toBe(0);
    const link = /(http:\/\/localhost:\d+\/register#[A-Za-z0-9_-]+)/.exec(added.stdout)?.[1] ?? '';
    // Bob's own phone: a browser and an authenticator of its own.
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1 });
    try {
      const bobPage = await phone.newPage();
      const bobCdp = await phone.newCDPSession(bobPage);
      await bobCdp.send('WebAuthn.enable');
      const bobAuthenticator = await bobCdp.send('WebAuthn.addVirtualAuthenticator', {
        options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
      });
      await bobPage.goto(link);
      await bobPage.locator('#register:not([disabled])').waitFor();
      await bobPage.click('#register');
      await bobPage.locator('#result[data-state="accepted"]').waitFor({ timeout: 30_000 });
      // A discoverable credential: the authenticator offers it without being told its id.
      const { credentials } = await bobCdp.send('WebAuthn.getCredentials', { authenticatorId: bobAuthenticator.authenticatorId });
      expect(credentials.map((c) => c.isResidentCredential)).toEqual([true]);
      // Storage cleared (as in another browser): the page knows no name.
      await bobPage.evaluate('localStorage.clear()');

      const posted: string[] = [];
      bobPage.on('request', (r) => {
        if (r.method() === 'POST') posted.push(new URL(r.url()).pathname);
      });
      writeFileSync(join(h.root, 'bob-1.txt'), 'b');
      const first = await park('bob-1.txt', { name: 'fs_delete', arguments: { path: 'bob-1.txt' } });
      await bobPage.goto(cardUrl(first.jobId, first.requestId));
      expect(await bobPage.textContent('#who-text')).toBe('Your passkey tells the page who you are when you decide.');
      expect(await bobPage.isVisible('#not-you')).toBe(false);
      expect(await decide('approve', {}, bobPage)).toContain('Approved');
      // Who it is (a passkey prompt), then the decision itself (another).
      expect(posted).toEqual(['/api/identify/options', '/api/identify', '/api/decision/options', '/api/decision']);
      expect(await bobPage.textContent('#who')).toBe('Deciding as bob · not you?');
      await expect(rememberedReviewer(bobPage)).resolves.toBe('bob');
      await h.waitFor(first.jobId, (st) => st.status === 'completed', 'completion');
      expect(h.audit(first.jobId, 'approval_decided')).toEqual([expect.objectContaining({ data: expect.objectContaining({ decision: 'approve', reviewer: 'bob', signed: true, signedWith: 'passkey' }) })]);
      expect(existsSync(join(h.root, 'bob-1.txt'))).toBe(false);

      // Remembered from then on: one prompt per decision.
      writeFileSync(join(h.root, 'bob-2.txt'), 'b');
      const second = await park('bob-2.txt', { name: 'fs_delete', arguments: { path: 'bob-2.txt' } });
      posted.length = 0;
      await bobPage.goto(cardUrl(second.jobId, second.requestId));
      expect(await decide('deny', { reason: 'not this one' }, bobPage)).toContain('Denied');
      expect(posted).toEqual(['/api/decision/options', '/api/decision']);
      await h.waitFor(second.jobId, (st) => st.status === 'completed', 'completion');
      expect(h.audit(second.jobId, 'approval_decided')[0]?.data).toMatchObject({ decision: 'deny', reviewer: 'bob', signedWith: 'passkey' });

      // "not you?" forgets the name: the next decision asks the passkey again.
      writeFileSync(join(h.root, 'bob-3.txt'), 'b');
      const third = await park('bob-3.txt', { name: 'fs_delete', arguments: { path: 'bob-3.txt' } });
      await bobPage.goto(cardUrl(third.jobId, third.requestId));
      await bobPage.click('#not-you');
      await expect(rememberedReviewer(bobPage)).resolves.toBeNull();
      expect(await bobPage.textContent('#who-text')).toBe('Your passkey tells the page who you are when you decide.');
      await bobPage.screenshot({ path: join(outputDir, 'inbox-card-identify.png') });
      posted.length = 0;
      expect(await decide('approve', {}, bobPage)).toContain('Approved');
      expect(posted).toEqual(['/api/identify/options', '/api/identify', '/api/decision/options', '/api/decision']);
      await h.waitFor(third.jobId, (st) => st.status === 'completed', 'completion');
      expect(h.audit(third.jobId, 'approval_decided')[0]?.data).toMatchObject({ reviewer: 'bob' });
    } finally {
      await phone.close();
    }
  });

  describe('forged decisions are rejected by the job, audited, and nothing runs', () => {
    let jobId: string;
    let requestId: string;
    const rejections = () => h.audit(jobId, 'approval_rejected').map((e) => e.data.code);

    beforeAll(async () => {
      writeFileSync(join(h.root, 'target.txt'), 'precious');
      ({ jobId, requestId } = await park('target.txt', { name: 'fs_delete', arguments: { path: 'target.txt' } }));
    });
    afterEach(async () => page.unrouteAll());
    afterAll(async () => {
      // Still waiting after every forgery, with the file in place.
      const state = await h.state(jobId);
      expect(state.pending.map((r) => r.requestId)).toEqual([requestId]);
      expect(existsSync(join(h.root, 'target.txt'))).toBe(true);
      expect(toolRuns(jobId, 'fs_delete')).toHaveLength(0);
      expect(h.audit(jobId, 'approval_decided')).toHaveLength(0);
    });

    test('an assertion replayed from another request', async () => {
      await page.goto(cardUrl(jobId, requestId));
      await page.route('**/api/decision', async (route) => {
        const body = JSON.parse(route.request().postData() ?? '{}') as Record<string, unknown>;
        await route.continue({ postData: JSON.stringify({ ...body, response: usedAssertion }) });
      });
      const shown = await decide('approve');
      expect(shown).toContain('signature_invalid');
      expect(shown).toContain('Nothing ran');
      expect(rejections()).toEqual(['signature_invalid']);
    });

    test('a decision altered after signing (a signed denial sent as an approval)', async () => {
      await page.goto(cardUrl(jobId, requestId));
      await page.route('**/api/decision', async (route) => {
        const body = JSON.parse(route.request().postData() ?? '{}') as { payload: Record<string, unknown> };
        await route.continue({ postData: JSON.stringify({ ...body, payload: { ...body.payload, decision: 'approve', reason: 'fine' } }) });
      });
      const shown = await decide('deny', { reason: 'no' });
      expect(shown).toContain('signature_invalid');
      expect(rejections()).toEqual(['signature_invalid', 'signature_invalid']);
    });

    test('an authenticator that was never registered, claiming the registered credential id', async () => {
      const registered = readReviewerKeysFile(keysFile).alice?.passkeys?.[0]?.id ?? '';
      await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId });
      const other = await cdp.send('WebAuthn.addVirtualAuthenticator', {
        options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
      });
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      await cdp.send('WebAuthn.addCredential', {
        authenticatorId: other.authenticatorId,
        credential: {
          credentialId: Buffer.from(registered, 'base64url').toString('base64'),
          isResidentCredential: false,
          rpId: 'localhost',
          privateKey: privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
          signCount: 0,
        },
      });
      await page.goto(cardUrl(jobId, requestId));
      const shown = await decide('approve');
      expect(shown).toContain('signature_invalid');
      expect(rejections()).toEqual(['signature_invalid', 'signature_invalid', 'signature_invalid']);
      expect(readFileSync(join(h.root, 'target.txt'), 'utf8')).toBe('precious');
    });
  });
});
