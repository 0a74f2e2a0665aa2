import { approvalCard } from '../../core/reviewer/approval-card';
import type { PendingRequestView } from '../../core/job/job-view';
import { parseConfig } from '../../core/config/config';
import { cardPage, listPage } from '../../servers/inbox/pages';
import { inboxSite } from '../../servers/inbox/site';

const now = Date.parse('2026-11-30T12:00:00.000Z');
const evil = '<img src=x onerror=alert(1)>"\'&';

/** A request whose every model- or file-chosen text tries to open markup. */
const request: PendingRequestView = {
  requestId: `req-${evil}`,
  callId: 'call_1',
  toolName: 'fs_delete',
  args: { path: `/srv/${evil}`, recursive: true },
  ruleId: 'approve-deletes',
  ruleVersion: 2,
  reason: `deletes ${evil}`,
  fingerprint: 'a'.repeat(64),
  nonce: 'b'.repeat(32),
  observed: [],
  editable: ['recursive'],
  reviewers: null,
  requester: `tester ${evil}`,
  createdAt: new Date(now - 60_000).toISOString(),
  expiresAt: new Date(now + 3_600_000).toISOString(),
};

const card = approvalCard(
  { jobId: `job-${evil}`, goal: `goal ${evil} PASSWORD=hunter2-secret`, request, batch: { statedReason: `because ${evil}`, calls: [] } },
  { now, cli: 'airlock' },
);

test('every text on the list and the card is escaped, and secrets are masked', () => {
  for (const html of [listPage([card], ''), cardPage(card, '/airlock')]) {
    expect(html).not.toContain('<img');
    expect(html).not.toContain('onerror=alert(1)>');
    expect(html).toContain('&#60;img src=x onerror=alert(1)&#62;&#34;&#39;&#38;');
    expect(html).not.toContain('hunter2-secret');
    // Our own script and stylesheet only, nothing inline.
    expect(html.match(/<script[^>]*>[^<]/g)).toBeNull();
    expect(html).not.toMatch(/ on[a-z]+=["']/);
  }
  const page = cardPage(card, '/airlock');
  expect(page).toContain('href="/airlock/assets/inbox.css"');
  expect(page).toContain('<label for="edit-recursive">recursive');
  expect(page).toContain('data-before="true"');
});

describe('the inbox site', () => {
  test('by default it listens on loopback and is opened at localhost (an IP cannot be a passkey RP id)', () => {
    const site = inboxSite(parseConfig({}));
    expect(site).toMatchObject({ listen: '127.0.0.1:7244', publicUrl: 'http://localhost:7244', origin: 'http://localhost:7244', rpId: 'localhost', basePath: '' });
    expect([...site.allowedHosts].sort()).toEqual(['127.0.0.1:7244', 'localhost:7244']);
  });

  test('behind a proxy: the public URL names the origin, the RP id and the path', () => {
    const site = inboxSite(parseConfig({ AIRLOCK_APPROVAL_PAGE_URL: 'https://home.example/airlock/', AIRLOCK_INBOX_LISTEN: '0.0.0.0:8000' }));
    expect(site).toMatchObject({ listen: '0.0.0.0:8000', publicUrl: 'https://home.example/airlock', origin: 'https://home.example', rpId: 'home.example', basePath: '/airlock' });
    expect([...site.allowedHosts].sort()).toEqual(['0.0.0.0:8000', 'home.example']);
  });

  test('a bad listen address names the variable', () => {
    expect(() => parseConfig({ AIRLOCK_INBOX_LISTEN: 'localhost:7244' })).toThrow(/AIRLOCK_INBOX_LISTEN: expected IP:port to listen on/);
  });
});
