import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sanitizeAuditEvent, type AuditEvent } from '../../core/audit/events';
import { parseConfig } from '../../core/config/config';
import { ConfigError } from '../../core/util/errors';
import { noticeEventId, noticeFor } from '../../core/reviewer/notification';
import { ntfyMessage } from '../../core/reviewer/ntfy';
import { endpointRequest } from '../../core/config/notify-endpoints';
import { SqliteNotificationOutbox } from '../../host/stores/outbox/sqlite';
import { Notifier } from '../../host/notifier';

const ctx = { namespace: 'home', webUiUrl: 'https://ui.lan/', approvalPageUrl: undefined };

const requested: AuditEvent = {
  type: 'approval_requested',
  jobId: 'job-1',
  at: '2026-01-02T03:04:05.000Z',
  policyVersion: 'v1',
  data: {
    requestId: 'r-1',
    callId: 'call_0_0',
    toolName: 'fs_delete',
    ruleId: 'approve-deletes',
    ruleVersion: 3,
    fingerprint: 'f'.repeat(64),
    requester: 'bob',
    argsSummary: '{"path":"/srv/a"}',
    expiresAt: '2026-01-03T03:04:05.000Z',
    target: '/srv/a',
    reason: 'Deleting needs approval — token=abc123secretvalue',
  },
};

function problem(env: Record<string, string>): string {
  try {
    parseConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

test('AIRLOCK_NOTIFY_URLS takes generic: and ntfy: URLs; a bad entry is named, its credentials hidden', () => {
  const config = parseConfig({ AIRLOCK_NOTIFY_URLS: 'generic:https://hooks.lan/airlock, ntfy:https://:tk_secret@ntfy.sh/home-airlock' });
  expect(config.notify.endpoints.map((e) => [e.kind, e.shown])).toEqual([
    ['generic', 'generic:https://hooks.lan/airlock'],
    ['ntfy', 'ntfy:https://***@ntfy.sh/home-airlock'],
  ]);
  expect(config.notify.webUiUrl).toBe('http://localhost:8233');
  expect(parseConfig({}).notify.endpoints).toEqual([]);

  const unknown = problem({ AIRLOCK_NOTIFY_URLS: 'slack:https://u:hunter2@hooks.lan/x' });
  expect(unknown).toMatch(/^invalid configuration: AIRLOCK_NOTIFY_URLS: "slack:https:\/\/\*\*\*@hooks\.lan\/x" must start with generic: or ntfy:/);
  expect(unknown).not.toContain('hunter2');
  expect(problem({ AIRLOCK_NOTIFY_URLS: 'ntfy:https://ntfy.sh/' })).toMatch(/AIRLOCK_NOTIFY_URLS: .* must end in an ntfy topic/);
  expect(problem({ AIRLOCK_NOTIFY_URLS: 'generic:not a url' })).toMatch(/AIRLOCK_NOTIFY_URLS: .* is not a URL after generic:/);
  expect(problem({ AIRLOCK_NOTIFY_ATTEMPTS: '0' })).toMatch(/AIRLOCK_NOTIFY_ATTEMPTS: expected a whole number between 1 and 50/);
  expect(problem({ AIRLOCK_NOTIFY_TIMEOUT: 'soon' })).toMatch(/AIRLOCK_NOTIFY_TIMEOUT: expected a duration/);
  expect(problem({ AIRLOCK_WEB_UI_URL: 'ui.lan' })).toMatch(/AIRLOCK_WEB_UI_URL: expected an http\(s\) URL/);
});

test('an ntfy endpoint is posted at its server root with the URL credentials as Basic auth', () => {
  const [endpoint] = parseConfig({ AIRLOCK_NOTIFY_URLS: 'ntfy:https://:tk_abc@push.lan/ntfy/home' }).notify.endpoints;
  expect(endpointRequest(endpoint!)).toEqual({ url: 'https://push.lan/ntfy/', authorization: `Basic ${Buffer.from(':tk_abc').toString('base64')}` });
});

test('notices: only the events people are told about, masked again, with a stable id', () => {
  const notice = noticeFor(requested, ctx);
  expect(notice).toMatchObject({
    event: 'approval_requested',
    reason: 'Deleting needs approval — token=***',
    links: { job: 'https://ui.lan/namespaces/home/workflows/job-1', approval: null },
    commands: { approve: 'npx airlock approve job-1 --request r-1', deny: 'npx airlock deny job-1 --request r-1 --reason TEXT' },
  });
  expect(JSON.stringify(notice)).not.toContain('abc123secretvalue');
  expect(noticeEventId(requested)).toBe(noticeEventId(JSON.parse(JSON.stringify(requested)) as AuditEvent));
  expect(noticeEventId(requested)).not.toBe(noticeEventId({ ...requested, at: '2026-01-02T03:04:06.000Z' }));
  // Without an approval page there is no button pointing nowhere.
  expect(ntfyMessage(notice!, 'home').actions).toEqual([{ action: 'view', label: 'Open job', url: 'https://ui.lan/namespaces/home/workflows/job-1', clear: false }]);
  expect(noticeFor({ type: 'policy_instruction_injected', jobId: 'job-1', at: requested.at, policyVersion: 'v1', data: { instructions: 1, turn: 1 } }, ctx)).toBeUndefined();

  const edited = noticeFor(
    {
      type: 'approval_decided',
      jobId: 'job-1',
      at: requested.at,
      policyVersion: 'v1',
      data: { requestId: 'r-1', toolName: 'fs_delete', decision: 'approve', reviewer: 'alice', originalFingerprint: 'f'.repeat(64), editedFingerprint: 'e'.repeat(64), signed: false, via: 'update' },
    },
    ctx,
  );
  expect(edited).toMatchObject({ decision: { outcome: 'edited', reviewer: 'alice', reason: null }, title: 'Edited: fs_delete' });
  expect(ntfyMessage(edited!, 'home').tags).toEqual(['airlock', 'pencil2', 'approval_decided']);
});

test('closing notices: each ending of a request, and of a job, is told; the request\'s notices share one ntfy sequence id', () => {
  const envelope = { jobId: 'job-1', at: requested.at, policyVersion: 'v1' };
  const call = { callId: 'call_0_0', toolName: 'fs_delete', fingerprint: 'f'.repeat(64), ruleId: 'approve-deletes', replayed: false };
  const ran = noticeFor({ ...envelope, type: 'tool_executed', data: { ...call, requestId: 'r-1', target: '/srv/a', ok: true } }, ctx);
  expect(ran).toMatchObject({ event: 'call_executed', requestId: 'r-1', title: 'Done: fs_delete on /srv/a' });
  const failed = noticeFor({ ...envelope, type: 'tool_executed', data: { ...call, requestId: 'r-1', target: '/srv/a', ok: false, reason: 'disk full' } }, ctx);
  expect(failed).toMatchObject({ event: 'call_not_run', title: 'Not run: fs_delete on /srv/a', outcome: 'failed: disk full' });
  const refused = noticeFor(
    { ...envelope, type: 'runtime_error', data: { code: 'revalidation_failed', error: '/srv/a: content changed (sha256 differs)', callId: 'call_0_0', toolName: 'fs_delete', requestId: 'r-1' } },
    ctx,
  );
  expect(refused).toMatchObject({ event: 'call_not_run', outcome: 'refused when checked again: /srv/a: content changed (sha256 differs)' });
  expect(refused?.text).toContain('did not run: refused when checked again');
  // An undo that ran says what came back.
  const undone = noticeFor({ ...envelope, jobId: 'undo-5be0', type: 'tool_executed', data: { ...call, toolName: 'fs_undo', ruleId: 'approve-undo', requestId: 'r-2', target: '/srv/share/photos', ok: true } }, ctx);
  expect(undone).toMatchObject({ event: 'call_executed', title: 'Undone: /srv/share/photos', text: 'Put back as it was before the change: /srv/share/photos (undo job undo-5be0).\nrequest: r-2' });
  // A bulk move's undo names the set.
  const set = noticeFor({ ...envelope, jobId: 'undo-77aa', type: 'tool_executed', data: { ...call, toolName: 'fs_undo', ruleId: 'approve-undo', requestId: 'r-3', target: '200 moved entries', ok: true } }, ctx);
  expect(set).toMatchObject({ title: 'Undone: 200 moved entries', text: 'Put back as it was before the change: 200 moved entries (undo job undo-77aa).\nrequest: r-3' });
  // An allowed call (no request) notifies nobody.
  expect(noticeFor({ ...envelope, type: 'tool_executed', data: { ...call, ok: true } }, ctx)).toBeUndefined();

  const cancelled = noticeFor({ ...envelope, type: 'job_cancelled', data: { turn: 2, pending: [{ requestId: 'r-1', toolName: 'fs_delete', target: '/srv/a' }] } }, ctx);
  expect(cancelled).toMatchObject({ event: 'job_cancelled', requestId: 'r-1', closes: ['r-1'], title: 'Cancelled: job job-1' });
  const ended = noticeFor({ ...envelope, type: 'job_ended', data: { status: 'completed', facts: '0 of 1 approved call ran: fs_delete /srv/a refused (content changed)', gated: 1, summary: 'Removed a' } }, ctx);
  expect(ended?.text).toBe('Job job-1 completed; 0 of 1 approved call ran: fs_delete /srv/a refused (content changed). The model says: “Removed a”');
  // A job no reviewer was asked about ends without a notice.
  expect(noticeFor({ ...envelope, type: 'job_ended', data: { status: 'completed', facts: '2 calls ran, none needed approval', gated: 0 } }, ctx)).toBeUndefined();

  // On ntfy, every notice of the request replaces "Approval needed" instead of stacking under it.
  const sequence = ntfyMessage(noticeFor(requested, ctx)!, 'home').sequence_id;
  expect(sequence).toMatch(/^airlock-[0-9a-f]{32}$/);
  for (const n of [ran, failed, refused, cancelled]) expect(ntfyMessage(n!, 'home').sequence_id).toBe(sequence);
  expect(ntfyMessage(ended!, 'home').sequence_id).toBeUndefined();
});

describe('the outbox', () => {
  let dir: string;
  let server: Server;
  let posts: string[];
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'airlock-outbox-'));
    posts = [];
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        posts.push(body);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterEach(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  test('the same event written twice (a retried audit write) is notified once', async () => {
    const file = join(dir, 'notifications.sqlite');
    const { endpoints } = parseConfig({ AIRLOCK_NOTIFY_URLS: `generic:http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` }).notify;
    const audit: AuditEvent[] = [];
    const notifier = new Notifier({
      outbox: new SqliteNotificationOutbox(file),
      endpoints,
      context: ctx,
      attempts: 2,
      backoffMs: 10,
      timeoutMs: 5_000,
      audit: { write: async (events) => void audit.push(...events), idempotent: false, prune: async () => 0 },
      warn: () => undefined,
    });
    notifier.start();
    const event = sanitizeAuditEvent(requested);
    await notifier.enqueue([event]);
    for (let i = 0; i < 100 && posts.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    await notifier.enqueue([sanitizeAuditEvent(JSON.parse(JSON.stringify(requested)) as AuditEvent)]);
    await new Promise((r) => setTimeout(r, 300));
    await notifier.stop();
    expect(posts).toHaveLength(1);
    expect(JSON.parse(posts[0]!)).toMatchObject({ eventId: noticeEventId(event), event: 'approval_requested' });
    const outbox = new SqliteNotificationOutbox(file);
    expect(await outbox.rows()).toEqual([{ eventId: noticeEventId(event), endpointId: endpoints[0]!.id, state: 'delivered', attempts: 1, lastError: null }]);
    // The endpoint's credentials are never stored: rows name it by a hash.
    await outbox.close();
    const raw = new Database(file).prepare('SELECT * FROM deliveries').all();
    expect(JSON.stringify(raw)).not.toContain('127.0.0.1');
    expect(audit).toEqual([]);
  });

  test('an endpoint that hangs holds its own slots and the loop waits for them instead of spinning', async () => {
    const hanging: ServerResponse[] = [];
    const slow = createServer((_req, res) => void hanging.push(res));
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    let claims = 0;
    class CountingOutbox extends SqliteNotificationOutbox {
      override claim(...args: Parameters<SqliteNotificationOutbox['claim']>) {
        claims++;
        return super.claim(...args);
      }
    }
    const { endpoints } = parseConfig({ AIRLOCK_NOTIFY_URLS: `generic:http://127.0.0.1:${(slow.address() as AddressInfo).port}/hook` }).notify;
    const notifier = new Notifier({
      outbox: new CountingOutbox(join(dir, 'notifications.sqlite')),
      endpoints,
      context: ctx,
      attempts: 2,
      backoffMs: 10,
      timeoutMs: 60_000,
      audit: { write: async () => undefined, idempotent: false, prune: async () => 0 },
      warn: () => undefined,
    });
    notifier.start();
    // Six events, four slots: two stay due while every slot hangs.
    await notifier.enqueue([1, 2, 3, 4, 5, 6].map((i) => sanitizeAuditEvent({ ...requested, at: `2026-01-02T03:04:0${i}.000Z` })));
    for (let i = 0; i < 200 && hanging.length < 4; i++) await new Promise((r) => setTimeout(r, 20));
    const before = claims;
    await new Promise((r) => setTimeout(r, 500));
    expect(hanging).toHaveLength(4);
    // A spinning loop claims thousands of times in half a second; a waiting one not once.
    expect(claims - before).toBeLessThan(5);
    await notifier.stop();
    for (const res of hanging) res.destroy();
    slow.closeAllConnections();
    await new Promise<void>((resolve) => slow.close(() => resolve()));
  });
});
