import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startInboxServer, type InboxServer } from '../../servers/inbox/inbox-server';
import { inboxSite } from '../../servers/inbox/site';
import { freePort } from '../helpers/ports';
import { parseConfig } from '../../core/config/config';
import { defaultRules } from '../../core/policy/default-rules';
import { JobHarness } from '../helpers/job-harness';
import { repoRoot } from '../helpers/processes';
import { call } from '../helpers/raw-http';

/*
 * The approval page as a decision screen, measured in a real browser at a
 * phone's size (390×844) and a desktop's (1440×900): what the reviewer
 * sees without scrolling, no sideways scrolling, target sizes, local
 * times. Screenshots go to test-output/.
 */

const chromiumPath = process.env.AIRLOCK_TEST_CHROMIUM ?? '/usr/bin/chromium';
const outputDir = join(repoRoot, 'test-output');
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1440, height: 900 };

/** Parked oldest first; long paths and a name without a single separator make long sentences. */
const FILES = [
  'old-backup.tar',
  'photos/2019/summer-holiday-in-the-mountains/IMG_20190812_141516_panorama_stitched_final_export_for_printing.jpg',
  `logs/${'x'.repeat(90)}.log`,
  'projects/archive/customer-relations-management-system-migration-2021/database-dump-before-migration-complete-do-not-delete-yet.sql.gz',
];

let h: JobHarness;
let port: number;
let inbox: InboxServer;
let browser: Browser;
const parked: Array<{ readonly jobId: string; readonly requestId: string }> = [];

beforeAll(async () => {
  port = await freePort();
  h = await JobHarness.create({ rules: defaultRules });
  const config = parseConfig({ TEMPORAL_ADDRESS: h.env.address, TEMPORAL_NAMESPACE: h.env.namespace, AIRLOCK_DATA_DIR: join(h.dir, 'data'), AIRLOCK_INBOX_LISTEN: `127.0.0.1:${port}` });
  inbox = await startInboxServer({ config, site: inboxSite(config), cli: 'airlock', log: () => undefined });
  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox'] });
  mkdirSync(outputDir, { recursive: true });
  for (const [i, path] of FILES.entries()) {
    mkdirSync(dirname(join(h.root, path)), { recursive: true });
    writeFileSync(join(h.root, path), 'x'.repeat(256 * 1024));
    const { jobId } = await h.start({
      jobId: `layout-${i}-${Date.now()}`,
      goal: 'free some space on the backup disk',
      script: {
        turns: [
          { content: `${path} looks like a leftover copy; deleting it frees 256 KiB.`, tool_calls: [{ name: 'fs_delete', arguments: { path } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
        ],
      },
    });
    parked.push({ jobId, requestId: (await h.waitForPending(jobId)).pending[0]?.requestId ?? '' });
  }
});

afterAll(async () => {
  await browser?.close();
  await inbox?.close();
  await h?.close();
});

function cardUrl(at: { readonly jobId: string; readonly requestId: string }): string {
  return `${inbox.url}/jobs/${encodeURIComponent(at.jobId)}/requests/${encodeURIComponent(at.requestId)}`;
}

/** A browser of its own at `viewport` that remembers alice as the reviewer (as after registering). */
async function open(viewport: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1, locale: 'en-US', timezoneId: 'Asia/Kolkata' });
  const page = await context.newPage();
  await page.goto(`${inbox.url}/`);
  await page.evaluate('localStorage.setItem("airlock.passkeyReviewer", "alice")');
  return { context, page };
}

/** Where an element is with the page scrolled to its top, and the viewport's size. */
async function box(page: Page, selector: string): Promise<{ top: number; bottom: number; left: number; right: number; height: number }> {
  const b = await page.locator(selector).first().boundingBox();
  if (b === null) throw new Error(`${selector} is not shown`);
  return { top: b.y, bottom: b.y + b.height, left: b.x, right: b.x + b.width, height: b.height };
}

async function inFirstScreen(page: Page, selector: string): Promise<boolean> {
  const { top, bottom } = await box(page, selector);
  const height = Number(await page.evaluate('innerHeight'));
  return top >= 0 && bottom <= height;
}

async function noSidewaysScroll(page: Page): Promise<{ scrollWidth: number; innerWidth: number }> {
  return page.evaluate<{ scrollWidth: number; innerWidth: number }>('({ scrollWidth: document.documentElement.scrollWidth, innerWidth })');
}

/** Every shown button and details summary: at least 44 pixels tall. */
async function smallTargets(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`Array.from(document.querySelectorAll('button, summary'))
    .filter((el) => el.getClientRects().length > 0)
    .filter((el) => el.getBoundingClientRect().height < 44)
    .map((el) => (el.id || el.textContent || '').trim() + ' ' + el.getBoundingClientRect().height)`);
}

describe.each([
  ['phone', PHONE],
  ['desktop', DESKTOP],
] as const)('at %s size', (label, viewport) => {
  let context: BrowserContext;
  let page: Page;
  beforeAll(async () => ({ context, page } = await open(viewport)));
  afterAll(async () => context?.close());

  test('the list: compact rows, newest first, at least three in the first screen', async () => {
    await page.goto(`${inbox.url}/`);
    const rows = page.locator('li.row');
    await expect(rows.count()).resolves.toBe(FILES.length);
    const order = await page.evaluate<string[]>(`Array.from(document.querySelectorAll('li.row')).map((el) => el.getAttribute('data-job'))`);
    expect(order).toEqual([...parked].reverse().map((p) => p.jobId));
    // Each row: the sentence as a link to its page, the rule, how long it waits.
    const first = rows.first();
    await expect(first.getByRole('link').getAttribute('href')).resolves.toBe(new URL(cardUrl(parked[FILES.length - 1]!)).pathname);
    expect(await first.textContent()).toMatch(/Delete database-dump-before-migration-complete-do-not-delete-yet\.sql\.gz \(256 KiB\) in .*— cannot be undone\s+approve-deletes · waiting \d+[sm] · expires in 23h/);
    const bottoms = await page.evaluate<number[]>(`Array.from(document.querySelectorAll('li.row')).map((el) => el.getBoundingClientRect().bottom)`);
    expect(bottoms.filter((b) => b <= viewport.height).length).toBeGreaterThanOrEqual(3);
    // Long sentences are cut to two lines, never more.
    const lines = await page.evaluate<number[]>(
      `Array.from(document.querySelectorAll('.row-action')).map((el) => Math.round(el.getBoundingClientRect().height / parseFloat(getComputedStyle(el).lineHeight)))`,
    );
    for (const n of lines) expect(n).toBeLessThanOrEqual(2);
    const { scrollWidth, innerWidth } = await noSidewaysScroll(page);
    expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
    await page.screenshot({ path: join(outputDir, `inbox-list-${label}.png`) });
  });

  test('a request: the sentence, Approve and Deny are in the first screen, the details follow', async () => {
    const target = parked[3]!;
    await page.goto(cardUrl(target));
    await page.locator('#who-text', { hasText: 'Deciding as alice' }).waitFor();
    expect(await page.textContent('h1')).toMatch(/^Delete database-dump-before-migration-complete-do-not-delete-yet\.sql\.gz \(256 KiB\) in .* — cannot be undone$/);
    for (const selector of ['h1', '#when', '#who', '#approve', '#deny']) expect([selector, await inFirstScreen(page, selector)]).toEqual([selector, true]);
    expect(await page.textContent('#who')).toMatch(/^Deciding as alice · not you\?$/);
    expect(await smallTargets(page)).toEqual([]);
    const { scrollWidth, innerWidth } = await noSidewaysScroll(page);
    expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
    // The details are collapsible sections: what is asked and why open, the ids closed.
    const sections = await page.evaluate<Array<[string, boolean]>>(`Array.from(document.querySelectorAll('details.detail')).map((el) => [el.getAttribute('data-detail'), el.open])`);
    expect(sections).toEqual([
      ['arguments', true],
      ['observed', true],
      ['rule', true],
      ['said', true],
      ['people', false],
      ['ids', false],
    ]);
    expect(await page.textContent('details[data-detail="said"]')).toContain('looks like a leftover copy');
    await page.screenshot({ path: join(outputDir, `inbox-card-${label}.png`) });

    if (label === 'phone') {
      // A bar fixed to the bottom: still there at the end of the page, and covering none of it.
      expect(await page.evaluate('getComputedStyle(document.getElementById("bar")).position')).toBe('fixed');
      await page.locator('details[data-detail="ids"] > summary').click();
      await page.evaluate('window.scrollTo(0, document.documentElement.scrollHeight)');
      for (const selector of ['#approve', '#deny']) expect([selector, await inFirstScreen(page, selector)]).toEqual([selector, true]);
      const last = await box(page, 'details[data-detail="ids"]');
      const bar = await box(page, '#bar');
      expect(last.bottom).toBeLessThanOrEqual(bar.top);
      await page.screenshot({ path: join(outputDir, 'inbox-card-phone-end.png') });
      // Deny opens the reason in the bar first, focused, with everything still on screen.
      await page.evaluate('window.scrollTo(0, 0)');
      expect(await page.isVisible('#reason')).toBe(false);
      await page.click('#deny');
      await expect(page.evaluate('document.activeElement && document.activeElement.id')).resolves.toBe('reason');
      expect(await page.textContent('#deny')).toBe('Deny with this reason');
      for (const selector of ['h1', '#reason', '#approve', '#deny']) expect([selector, await inFirstScreen(page, selector)]).toEqual([selector, true]);
      await page.screenshot({ path: join(outputDir, 'inbox-card-phone-reason.png') });
    } else {
      // Two columns: the summary and the decision on the left, the details on the right.
      expect(await page.evaluate('getComputedStyle(document.getElementById("bar")).position')).toBe('static');
      expect(await page.isVisible('#reason')).toBe(true);
      expect(await page.isVisible('#reason-toggle')).toBe(false);
      const left = await box(page, '.primary');
      const right = await box(page, '.details');
      expect(right.left).toBeGreaterThanOrEqual(left.right);
      expect(await inFirstScreen(page, '#reason')).toBe(true);
    }
  });
});

test('times are shown in the reader’s time zone, relative, and as a date and time on a tap', async () => {
  const { context, page } = await open(PHONE);
  try {
    await page.goto(cardUrl(parked[0]!));
    const since = page.locator('#when time[data-rel="since"]');
    const until = page.locator('#when time[data-rel="until"]');
    // Server-rendered ISO time (UTC), rewritten by the script: the title is the local time (Kolkata is UTC+5:30).
    expect(await since.getAttribute('datetime')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    await expect(since.getAttribute('title')).resolves.toMatch(/GMT\+5:30$/);
    expect(await since.textContent()).toMatch(/^waiting \d+[sm]$/);
    expect(await until.textContent()).toBe('expires in 23h');
    await page.click('#when');
    expect(await page.getAttribute('#when', 'aria-pressed')).toBe('true');
    expect(await since.textContent()).toMatch(/^waiting since .*GMT\+5:30$/);
    expect(await until.textContent()).toMatch(/^expires .*GMT\+5:30$/);
    await page.focus('#when');
    await page.keyboard.press('Enter');
    expect(await since.textContent()).toMatch(/^waiting \d+[sm]$/);
    // Without JavaScript the server's text stands: relative words, the UTC minute as the title.
    const raw = (await call(port, { path: new URL(cardUrl(parked[0]!)).pathname })).body;
    expect(raw).toMatch(/<time datetime="[^"]+Z" data-rel="since" title="\d{4}-\d\d-\d\d \d\d:\d\d UTC">waiting \d+s<\/time>/);
  } finally {
    await context.close();
  }
});
