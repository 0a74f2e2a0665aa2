import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from 'playwright-core';
import { startInboxServer, type InboxServer } from '../../servers/inbox/inbox-server';
import { inboxSite } from '../../servers/inbox/site';
import { parseConfig } from '../../core/config/config';
import { defaultRules } from '../../core/policy/default-rules';
import { statePaths } from '../../host/config/paths';
import { ReviewerKeysFile } from '../../host/keys/reviewer-keys';
import { JobHarness, type HarnessOptions } from './job-harness';
import { freePort } from './ports';
import { repoRoot } from './processes';

/** Debian's chromium (`.ci/run` installs it); AIRLOCK_TEST_CHROMIUM points elsewhere. */
export const chromiumPath = process.env.AIRLOCK_TEST_CHROMIUM ?? '/usr/bin/chromium';
/** Where browser tests leave their screenshots. */
export const outputDir = join(repoRoot, 'test-output');

/** A job harness under the built-in rules, the approval page served beside it, and a phone-sized headless chromium with a virtual passkey authenticator. */
export interface InboxBrowser {
  readonly h: JobHarness;
  readonly inbox: InboxServer;
  readonly port: number;
  /** The reviewer keys file the page writes and the in-process workers read. */
  readonly keysFile: string;
  readonly browser: Browser;
  readonly context: BrowserContext;
  readonly page: Page;
  readonly cdp: CDPSession;
  readonly authenticatorId: string;
  close(): Promise<void>;
}

export async function startInboxBrowser(options: Partial<HarnessOptions> = {}): Promise<InboxBrowser> {
  if (!existsSync(chromiumPath)) throw new Error(`no chromium at ${chromiumPath} (set AIRLOCK_TEST_CHROMIUM)`);
  const port = await freePort();
  // The workers in this process read the keys file the inbox writes, as deployed agent workers do (it lives in the harness's folder).
  const read: { file?: ReviewerKeysFile } = {};
  const h = await JobHarness.create({ rules: defaultRules, ...options, reviewerKeys: { get: (r) => read.file?.get(r), passkeys: (r) => read.file?.passkeys(r) ?? [] } });
  const config = parseConfig({
    TEMPORAL_ADDRESS: h.env.address,
    TEMPORAL_NAMESPACE: h.env.namespace,
    AIRLOCK_DATA_DIR: join(h.dir, 'data'),
    AIRLOCK_INBOX_LISTEN: `127.0.0.1:${port}`,
  });
  const keysFile = statePaths(config).reviewerKeys;
  read.file = ReviewerKeysFile.open(keysFile, { mustExist: false });
  const inbox = await startInboxServer({ config, site: inboxSite(config), cli: 'airlock', log: () => undefined });
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  mkdirSync(outputDir, { recursive: true });
  return {
    h,
    inbox,
    port,
    keysFile,
    browser,
    context,
    page,
    cdp,
    authenticatorId,
    close: async () => {
      await browser.close();
      await inbox.close();
      await h.close();
    },
  };
}

/** Registers a passkey for `reviewer` in this browser from the invite link `airlock reviewer add --passkey` prints. */
export async function registerPasskey(b: InboxBrowser, reviewer: string): Promise<string> {
  const added = await b.h.cli(['reviewer', 'add', reviewer, '--passkey'], { AIRLOCK_INBOX_LISTEN: `127.0.0.1:${b.port}` });
  if (added.code !== 0) throw new Error(`reviewer add failed: ${added.stderr}`);
  const link = /(http:\/\/localhost:\d+\/register#[A-Za-z0-9_-]+)/.exec(added.stdout)?.[1] ?? '';
  await b.page.goto(link);
  await b.page.locator('#register:not([disabled])').waitFor();
  await b.page.click('#register');
  await b.page.locator('#result[data-state="accepted"]').waitFor({ timeout: 30_000 });
  return link;
}

/**
 * Decides on the card page and returns the result line the page shows. The
 * reviewer is whoever the passkey says (no name is typed); on a phone the
 * reason is folded into the bar until opened.
 */
export async function decideOnCard(on: Page, button: 'approve' | 'deny', fill: { reason?: string; edits?: Record<string, string> } = {}): Promise<string> {
  for (const [field, value] of Object.entries(fill.edits ?? {})) await on.fill(`#edit-${field}`, value);
  if (fill.reason !== undefined) {
    if (!(await on.isVisible('#reason'))) await on.click('#reason-toggle');
    await on.fill('#reason', fill.reason);
  }
  await on.click(`#${button}`);
  const result = on.locator('#result');
  await result.locator('xpath=self::*[@data-state="accepted" or @data-state="rejected" or @data-state="error" or @data-state="queued"]').waitFor({ timeout: 60_000 });
  return (await result.textContent()) ?? '';
}
