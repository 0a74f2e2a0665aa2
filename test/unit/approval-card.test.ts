import { approvalCardSchema } from '../../core/approval/card';
import { actionSentence, rwx } from '../../core/reviewer/action-sentence';
import type { ObservedState } from '../../core/tools/observed-state';
import { approvalCard, cardMarkdown, cardsMarkdown, cardText, expiresText, humanDuration, mayDecideText, shellWord, waitingText } from '../../core/reviewer/approval-card';
import type { ParkedBatchView } from '../../core/job/batch-view';
import { pendingView, pendingViews, type PendingRequestView } from '../../core/job/job-view';
import { pendingCards, pendingTable } from '../../core/reviewer/pending-table';
import { shownStatus } from '../../client/airlock-client';
import { pendingMemo, pendingMemoSchema } from '../../core/reviewer/pending-memo';
import { textPreview } from '../../core/tools/content-preview';

const now = Date.parse('2026-11-30T12:00:00.000Z');
const minutes = (n: number) => n * 60_000;

/** A request as a job publishes it: a folder delete under a rule that lets the reviewer edit `recursive`. */
const request: PendingRequestView = {
  requestId: '3f2a9c1e-0b7d-4e55-9a10-2c6d8e4f1a77',
  callId: 'call_1',
  toolName: 'fs_delete',
  args: { path: '/srv/root/cache', recursive: true },
  ruleId: 'approve-deletes',
  ruleVersion: 2,
  reason: 'deletes — a person looks first',
  fingerprint: 'a'.repeat(64),
  nonce: 'b'.repeat(32),
  observed: [
    {
      path: '/srv/root/cache',
      exists: true,
      type: 'directory',
      size: 4096,
      mtimeMs: 1796030178905,
      mode: '755',
      dev: 1,
      ino: 2,
      sha256: null,
      entries: 3,
      tree: { complete: true, entries: 12, files: 9, bytes: 524288, sha256: 'c'.repeat(64) },
    },
  ],
  editable: ['recursive'],
  reviewers: ['alice', 'bob'],
  requester: 'tester',
  createdAt: new Date(now - minutes(3) - 20_000).toISOString(),
  expiresAt: new Date(now + minutes(23 * 60 + 10)).toISOString(),
};

/** The model's reason carries a secret it read somewhere: no surface may show it. */
const SECRET = 'PASSWORD=hunter2-is-the-secret';
const batch: ParkedBatchView = {
  statedReason: `The cache is stale; I will list the root, then remove the cache.\nI found ${SECRET} in a config file.`,
  calls: [
    { callId: 'call_0', toolName: 'fs_list', target: '/srv/root', decision: 'allowed (runs once the batch is decided)', requestId: null },
    { callId: 'call_1', toolName: 'fs_delete', target: '/srv/root/cache', decision: 'waiting for approval (rule approve-deletes)', requestId: request.requestId },
    { callId: 'call_2', toolName: 'fs_delete', target: '/srv/root/keep', decision: 'denied by rule protect-keep', requestId: null },
  ],
};

const card = approvalCard({ jobId: 'job-42', goal: 'free some space', request, batch }, { now, cli: 'npx airlock' });

test('human times relative to the given now', () => {
  expect(humanDuration(45_000)).toBe('45s');
  expect(humanDuration(minutes(3) + 59_000)).toBe('3m');
  expect(humanDuration(minutes(23 * 60 + 59))).toBe('23h');
  expect(humanDuration(minutes(24 * 60))).toBe('1d');
  expect(humanDuration(minutes(6 * 24 * 60 + 150))).toBe('6d 2h');
  expect(waitingText(now - minutes(3), now)).toBe('waiting 3m');
  expect(expiresText(now + minutes(23 * 60 + 1), now)).toBe('expires in 23h');
  expect(expiresText(now - minutes(5), now)).toBe('expired 5m ago');
});

test('commands quote what a shell would split', () => {
  expect(shellWord('job-42')).toBe('job-42');
  expect(shellWord("it's mine")).toBe(`'it'\\''s mine'`);
  const odd = approvalCard({ jobId: 'my job', goal: 'g', request, batch: null }, { now, cli: 'airlock' });
  expect(odd.commands.approve).toBe(`airlock approve 'my job' --request ${request.requestId}`);
});

test('the card as an object (for --json and notifications)', () => {
  expect(approvalCardSchema.parse(card)).toEqual(card);
  expect(card).toMatchObject({
    jobId: 'job-42',
    requestId: request.requestId,
    operation: { tool: 'fs_delete', target: '/srv/root/cache', args: { path: '/srv/root/cache', recursive: true } },
    observed: [{ path: '/srv/root/cache', exists: true, files: 9, entries: 12, bytes: 524288 }],
    rule: { id: 'approve-deletes', version: 2, reason: 'deletes — a person looks first' },
    otherCalls: [
      { tool: 'fs_list', target: '/srv/root', decision: 'allowed (runs once the batch is decided)', requestId: null },
      { tool: 'fs_delete', target: '/srv/root/keep', decision: 'denied by rule protect-keep', requestId: null },
    ],
    editable: ['recursive'],
    editNote: 'this call only; editing creates a new fingerprint',
    requester: 'tester',
    waiting: 'waiting 3m',
    expires: 'expires in 23h',
    commands: {
      approve: `npx airlock approve job-42 --request ${request.requestId}`,
      deny: `npx airlock deny job-42 --request ${request.requestId} --reason TEXT`,
      edit: `npx airlock approve job-42 --request ${request.requestId} --set recursive=VALUE`,
    },
  });
});

test('the card as terminal text', () => {
  expect(cardText(card)).toEqual([
    // What will happen, in words, before the exact call.
    '  Delete cache (folder, 9 files, 512 KiB) in root — cannot be undone',
    `  request ${request.requestId}: fs_delete /srv/root/cache`,
    '    arguments: {"path":"/srv/root/cache","recursive":true}',
    '    target /srv/root/cache: folder, 9 files, 12 entries, 512 KiB below, mode 755',
    '    rule approve-deletes v2: deletes — a person looks first',
    "    the model's reason:",
    '      The cache is stale; I will list the root, then remove the cache.',
    '      I found PASSWORD=*** in a config file.',
    '    same batch:',
    '      fs_list /srv/root: allowed (runs once the batch is decided)',
    '      fs_delete /srv/root/keep: denied by rule protect-keep',
    '    may edit: recursive (this call only; editing creates a new fingerprint)',
    '    requested by tester, waiting 3m, expires in 23h (2026-12-01 11:10 UTC); may decide: alice, bob',
    `    fingerprint ${'a'.repeat(64)}`,
    `    approve: npx airlock approve job-42 --request ${request.requestId}`,
    `    edit:    npx airlock approve job-42 --request ${request.requestId} --set recursive=VALUE`,
    `    deny:    npx airlock deny job-42 --request ${request.requestId} --reason TEXT`,
  ]);
});

test('the card as Markdown (the Web UI current details)', () => {
  const text = cardsMarkdown([card], now);
  expect(text.split('\n')).toEqual([
    '### Waiting for approval (1)',
    '',
    'Written 2026\\-11\\-30 12:00 UTC.',
    '',
    '#### Delete cache \\(folder, 9 files, 512 KiB\\) in root — cannot be undone',
    '',
    '- **call:** fs\\_delete on `/srv/root/cache`',
    '- **arguments:** `{"path":"/srv/root/cache","recursive":true}`',
    '- **target** `/srv/root/cache`: folder, 9 files, 12 entries, 512 KiB below, mode 755',
    '- **rule:** `approve-deletes` v2 — deletes — a person looks first',
    "- **the model's reason:** The cache is stale; I will list the root, then remove the cache. I found PASSWORD=\\*\\*\\* in a config file.",
    '- **same batch:**',
    '  - fs\\_list `/srv/root`: allowed \\(runs once the batch is decided\\)',
    '  - fs\\_delete `/srv/root/keep`: denied by rule protect\\-keep',
    '- **may edit:** `recursive` (this call only; editing creates a new fingerprint)',
    // Absolute times: the Web UI shows the card long after it was written.
    '- **requested by** tester at 2026\\-11\\-30 11:56 UTC; expires 2026\\-12\\-01 11:10 UTC',
    '- **may decide:** alice, bob',
    `- **request** \`${request.requestId}\`, fingerprint \`${'a'.repeat(64)}\``,
    '',
    '**Decide** from a terminal where airlock is configured for this server:',
    // Wrapped where a shell reads it the same: the Web UI's box does not clip it; one block per command.
    '',
    'approve:',
    '',
    '```sh',
    'npx airlock approve job-42 \\',
    `  --request ${request.requestId}`,
    '```',
    '',
    'approve with an edit:',
    '',
    '```sh',
    'npx airlock approve job-42 \\',
    `  --request ${request.requestId} \\`,
    '  --set recursive=VALUE',
    '```',
    '',
    'deny:',
    '',
    '```sh',
    'npx airlock deny job-42 \\',
    `  --request ${request.requestId} \\`,
    '  --reason TEXT',
    '```',
  ]);
  expect(cardsMarkdown([], now)).toBe('');
  // With the approval page configured on the agent workers, each card links to its request there.
  expect(cardsMarkdown([card], now, 'https://airlock.example.net/')).toContain(
    `**Decide** on the approval page: [open this request](https://airlock.example.net/jobs/job-42/requests/${request.requestId}), or from a terminal`,
  );
});

test('text from the job cannot format, link or inject HTML in the Markdown card', () => {
  const hostile = approvalCard(
    { jobId: 'j', goal: 'g', request: { ...request, args: { path: '/srv/a`b', recursive: false }, reason: '<img src=x onerror=alert(1)> [click](http://evil)' }, batch: null },
    { now, cli: 'airlock' },
  );
  const text = cardMarkdown(hostile);
  expect(text).toContain('&lt;img src=x onerror=alert\\(1\\)&gt; \\[click\\]\\(http://evil\\)');
  expect(text).toContain('``/srv/a`b``');
  expect(text).not.toContain('<img');
});

test('a secret in any field never reaches a surface', () => {
  const leaky = approvalCard(
    {
      jobId: 'job-7',
      goal: `log in with ${SECRET}`,
      request: { ...request, args: { path: `/srv/root/${SECRET}`, recursive: false }, reason: `rule says ${SECRET}`, observed: [] },
      batch: { statedReason: SECRET, calls: [{ callId: 'x', toolName: 'fs_read', target: `/srv/${SECRET}`, decision: 'allowed', requestId: null }] },
    },
    { now, cli: 'airlock' },
  );
  const surfaces = [JSON.stringify(leaky), cardText(leaky).join('\n'), cardMarkdown(leaky), pendingTable([leaky], 'airlock').join('\n')];
  for (const text of surfaces) {
    expect(text).not.toContain('hunter2');
    expect(text).toMatch(/PASSWORD=(\\\*){3}|PASSWORD=\*\*\*/);
  }
});

test('the pending table: one row per request, a count line and the hint', () => {
  const second: PendingRequestView = {
    ...request,
    requestId: '9b1c0d2e-aaaa-4bbb-8ccc-ddddeeeeffff',
    toolName: 'fs_write',
    args: { path: '/srv/root/notes/a-rather-long-file-name-that-goes-on-and-on.txt', content: 'x', mode: 'overwrite' },
    ruleId: 'approve-writes',
    ruleVersion: 1,
    observed: [],
    createdAt: new Date(now - 45_000).toISOString(),
    expiresAt: new Date(now + minutes(50)).toISOString(),
  };
  const cards = pendingCards(
    [
      { jobId: 'job-42', goal: 'free some space', pending: [request], batch },
      { jobId: 'job-43', goal: 'write notes', pending: [second] },
    ],
    { now, cli: 'airlock' },
  );
  expect(pendingTable(cards, 'airlock')).toEqual([
    'JOB     REQUEST   TOOL       TARGET                                    RULE                WAITING  EXPIRES',
    'job-42  3f2a9c1e  fs_delete  /srv/root/cache                           approve-deletes v2  3m       in 23h',
    // A long path loses its middle: the root and the file's name stay.
    'job-43  9b1c0d2e  fs_write   /srv/root/notes…-that-goes-on-and-on.txt  approve-writes v1   45s      in 50m',
    '',
    '2 requests waiting in 2 jobs',
    "full cards (the model's reason, observed state, the batch, the exact commands): airlock pending --card, or airlock show JOB",
    'approve: airlock approve JOB --request REQUEST   deny: airlock deny JOB --request REQUEST --reason TEXT',
  ]);
  expect(pendingTable([], 'airlock')).toEqual(['no job is waiting for approval']);
  // One request waiting: its exact commands, not placeholders.
  const one = pendingTable(cards.slice(0, 1), 'airlock');
  expect(one.slice(-2)).toEqual([`approve: airlock approve job-42 --request ${request.requestId}`, `deny:    airlock deny job-42 --request ${request.requestId} --reason TEXT`]);
});

describe("a job's status as people see it", () => {
  const described = (name: string, own: string | undefined) => ({
    status: { name, code: 0 },
    typedSearchAttributes: { get: () => own },
  }) as unknown as Parameters<typeof shownStatus>[0];

  test.each([
    ['RUNNING', 'awaiting_approval', 'awaiting_approval'],
    ['RUNNING', undefined, 'running'],
    ['COMPLETED', 'completed', 'completed'],
    ['COMPLETED', 'aborted', 'aborted'],
    ['CANCELLED', 'cancelled', 'cancelled'],
    // Cancelled by a build that did not report it, terminated or timed out: the job never said so.
    ['CANCELLED', 'awaiting_approval', 'cancelled'],
    ['TERMINATED', 'awaiting_approval', 'terminated'],
    ['TIMED_OUT', 'running', 'timed_out'],
    ['FAILED', 'awaiting_approval', 'failed'],
  ])('%s with AirlockStatus %s is %s', (name, own, shown) => {
    expect(shownStatus(described(name, own))).toBe(shown);
  });
});

test('who may decide is said as the rule says it: signature, named reviewers, the requester excluded', () => {
  const base = { requester: 'bob' };
  expect(mayDecideText({ ...base, reviewers: null, signatureRequired: true, separateRequester: true })).toBe(
    'any reviewer with a key or passkey; a signed decision is required (key or passkey); not the requester (bob)',
  );
  expect(mayDecideText({ ...base, reviewers: ['alice'], signatureRequired: true, separateRequester: false })).toBe('alice; a signed decision is required (key or passkey)');
  expect(mayDecideText({ ...base, reviewers: null, signatureRequired: false, separateRequester: false })).toBe('anyone; unsigned decisions count');
  expect(mayDecideText({ ...base, reviewers: [], signatureRequired: true })).toBe('nobody; a signed decision is required (key or passkey)');
  // A signing rule's card never says "anyone".
  const card = approvalCard({ jobId: 'j', goal: 'g', request: { ...request, reviewers: null, signatureRequired: true }, batch: null }, { now: Date.parse(request.createdAt), cli: 'npx airlock' });
  expect(cardText(card).join('\n')).toContain('may decide: any reviewer with a key or passkey; a signed decision is required');
  expect(cardMarkdown(card)).not.toContain('anyone');
});

test('the action sentence says what will happen, from the tool, its arguments and the target as observed', () => {
  const file = (path: string, size: number, mode = '644') => ({ path, exists: true as const, type: 'file' as const, size, mtimeMs: 0, mode, sha256: null, dev: 1, ino: 1, entries: null });
  const say = (toolName: string, args: unknown, observed: ObservedState[] = []) => actionSentence({ toolName, args, observed, target: 'T' });
  expect(say('fs_delete', { path: '/srv/airlock-demo/old-backup.tar' }, [file('/srv/airlock-demo/old-backup.tar', 262_144)])).toBe('Delete old-backup.tar (256 KiB) in airlock-demo — cannot be undone');
  // The tools side said, before approval, whether the delete is kept for undo.
  const kept = actionSentence({ toolName: 'fs_delete', args: { path: '/srv/share/a.tar' }, observed: [file('/srv/share/a.tar', 1024)], target: 'T', undo: { reversible: true, keepDays: 7 } });
  expect(kept).toBe('Delete a.tar (1 KiB) in share — reversible for 7 days (airlock undo)');
  const notKept = actionSentence({ toolName: 'fs_delete', args: { path: '/srv/share/a.tar' }, observed: [file('/srv/share/a.tar', 1024)], target: 'T', undo: { reversible: false, why: 'x' } });
  expect(notKept).toBe('Delete a.tar (1 KiB) in share — cannot be undone');
  expect(say('fs_write', { path: '/srv/notes/a.txt', content: 'hello', mode: 'create' })).toBe('Create a.txt (5 bytes) in notes');
  expect(say('fs_write', { path: '/srv/notes/a.txt', content: 'x'.repeat(2048), mode: 'overwrite' }, [file('/srv/notes/a.txt', 10)])).toBe('Replace a.txt (10 bytes) in notes with 2 KiB — the old content is lost');
  expect(say('fs_write', { path: '/srv/notes/a.txt', content: 'more', mode: 'append' }, [file('/srv/notes/a.txt', 10)])).toBe('Append 4 bytes to a.txt (10 bytes now) in notes');
  expect(say('fs_chmod', { path: '/srv/app/run.sh', mode: '750' }, [file('/srv/app/run.sh', 10, '777')])).toBe('Change the permissions of run.sh in app to rwxr-x--- (now rwxrwxrwx)');
  expect(say('fs_move', { from: '/srv/in/a.mkv', to: '/srv/media/a.mkv' }, [file('/srv/in/a.mkv', 3 * 1024 ** 3)])).toBe('Move a.mkv (3 GiB) in in to /srv/media/a.mkv');
  const service = { kind: 'service' as const, service: 'jellyfin', adapter: 'docker', exists: true, identity: 'c1', running: true, health: 'healthy' as const, status: 'running', facts: {} };
  expect(say('service_restart', { service: 'jellyfin' }, [service])).toBe('Restart service jellyfin (running, healthy)');
  // A tool without its own wording, or arguments its schema refuses: the tool and its target.
  expect(say('fs_read', { path: '/srv/a' })).toBe('fs_read T');
  expect(say('fs_delete', { nonsense: true })).toBe('fs_delete T');
  expect(rwx('0640')).toBe('rw-r-----');
});

describe('what a call changes, on the card', () => {
  const service: ObservedState = {
    kind: 'service',
    service: 'jellyfin',
    adapter: 'docker',
    exists: true,
    identity: 'c0ffee',
    running: true,
    health: 'healthy',
    status: 'running',
    facts: { image: 'jellyfin/jellyfin:10.9', restarts: 2 },
  };
  const cardOf = (r: Partial<PendingRequestView>) => approvalCard({ jobId: 'job-9', goal: 'g', request: { ...request, editable: [], ...r }, batch: null }, { now, cli: 'airlock' });

  test("a service action shows the service's state now", () => {
    const c = cardOf({ toolName: 'service_restart', args: { service: 'jellyfin' }, observed: [service] });
    expect(c.change).toEqual({ kind: 'service', service: 'jellyfin', action: 'restart', now: 'running, healthy, image jellyfin/jellyfin:10.9, restarts 2' });
    expect(cardText(c)).toContain('    changes: jellyfin now: running, healthy, image jellyfin/jellyfin:10.9, restarts 2; will restart');
    expect(cardMarkdown(c)).toContain('- **changes:** jellyfin now: running, healthy, image jellyfin/jellyfin:10.9, restarts 2; will restart');
  });

  test('a diff: a key in the file is masked though only its last lines are in the context; notifications show a few lines; a fence in the content cannot close the block', () => {
    const key = ['-----BEGIN OPENSSH PRIVATE KEY-----', 'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ', 'AAAAC3NzaC1lZDI1NTE5AAAAIPrivateSeedBytesHere', '-----END OPENSSH PRIVATE KEY-----'];
    const before = ['[server]', 'name = home', ...key, 'port = 80', ''].join('\n');
    const after = ['[server]', 'name = home', ...key, 'port = 81', '```', ...Array.from({ length: 7 }, (_, i) => `line ${i}`), ''].join('\n');
    // Made as the tools side makes it: each text masked whole, then diffed.
    const preview = textPreview('/srv/root/app.conf', before, after);
    const c = cardOf({ toolName: 'fs_write', args: { path: '/srv/root/app.conf', content: 'x', mode: 'overwrite' }, preview });
    const shown = JSON.stringify([preview, c]);
    expect(shown).not.toContain('PrivateSeedBytesHere');
    expect(shown).not.toContain('b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ');
    expect(c.change).toMatchObject({ kind: 'diff', added: 9, removed: 1 });
    const text = cardText(c);
    expect(text).toContain('    changes: /srv/root/app.conf: +9 −1 lines');
    expect(text).toContain('      +line 6');
    const notice = cardText(c, '', { changeLines: 8 });
    // The key is one masked context line: 14 diff lines, 8 shown.
    expect(notice).toContain('     ***');
    expect(notice).toContain('    +line 0');
    expect(notice).not.toContain('    +line 1');
    expect(notice).toContain('    … 6 more lines');
    const md = cardMarkdown(c);
    expect(md).toContain('  ````diff\n');
    expect(md).toContain('  +```\n');
    expect(md).toContain('\n  ````\n');
  });

  test('the new text cannot hide the old text\'s lines behind a mask it opens', () => {
    const before = ['a = 1', 'b = 2', 'c = 3', 'd = 4', ''].join('\n');
    const after = ['# -----BEGIN NOTE PRIVATE KEY-----', 'a = 1', 'd = 4', '# -----END NOTE PRIVATE KEY-----', ''].join('\n');
    const preview = textPreview('/srv/root/x.conf', before, after);
    // The removals come from the old text, masked on its own: they stay visible.
    expect(preview.kind === 'text' ? preview.lines : []).toEqual(expect.arrayContaining(['-b = 2', '-c = 3']));
  });

  test('binary and not comparable contents say so in words', () => {
    const bin = cardOf({ toolName: 'fs_write', args: { path: '/srv/root/a.bin', content: 'x', mode: 'overwrite' }, preview: { kind: 'binary', path: '/srv/root/a.bin', beforeBytes: 3 * 1024 * 1024, afterBytes: 12 } });
    expect(bin.change).toEqual({ kind: 'note', path: '/srv/root/a.bin', text: 'binary, 3 MiB → 12 bytes' });
    const large = cardOf({ toolName: 'fs_write', args: { path: '/srv/root/big.log', content: 'x', mode: 'overwrite' }, preview: { kind: 'unavailable', path: '/srv/root/big.log', why: 'the file is too large to compare (3 MiB)' } });
    expect(cardText(large)).toContain('    changes: /srv/root/big.log: no diff: the file is too large to compare (3 MiB)');
  });
});

test('the memo a list reads keeps the first 40 diff lines, counts the rest, and parses back with the diff', () => {
  const lines = ['@@ -0,0 +1,60 @@', ...Array.from({ length: 60 }, (_, i) => `+line ${i} password=hunter2`)];
  const memo = pendingMemo({
    goal: 'g',
    pending: [
    {
      ...request,
      editable: [],
      reviewers: null,
      args: { path: '/srv/root/new.txt', content: 'x', mode: 'create' },
      toolName: 'fs_write',
      separateRequester: false,
      signatureRequired: false,
      status: 'pending',
      createdAt: now,
      expiresAt: now + 1000,
      observed: [],
      preview: { kind: 'text', path: '/srv/root/new.txt', lines, added: 60, removed: 0, omitted: 0 },
    },
    ],
  });
  const parsed = pendingMemoSchema.parse(JSON.parse(JSON.stringify(memo)));
  expect(parsed.requests[0]?.preview).toMatchObject({ kind: 'text', added: 60, omitted: 21 });
  const kept = parsed.requests[0]?.preview;
  expect(kept?.kind === 'text' ? kept.lines : []).toHaveLength(40);
  expect(JSON.stringify(parsed)).not.toContain('hunter2');
});

test("a job's memo of request views masks each request once and follows a replaced request", () => {
  const pending = {
    ...request,
    editable: ['content'],
    reviewers: null,
    args: { path: '/srv/root/.env', content: 'API_KEY=sk-live-0123456789abcdef', mode: 'overwrite' },
    toolName: 'fs_write',
    separateRequester: false,
    signatureRequired: false,
    status: 'pending' as const,
    createdAt: now,
    expiresAt: now + 1000,
    observed: [],
  };
  const viewOf = pendingViews();
  const first = viewOf(pending);
  expect(JSON.stringify(first)).not.toContain('sk-live-0123456789abcdef');
  expect(viewOf(pending)).toBe(first);
  // State replaces a request when it changes: the new object gets its own view.
  const edited = { ...pending, args: { ...pending.args, content: 'DEBUG=1' } };
  expect(viewOf(edited).args).toEqual({ path: '/srv/root/.env', content: 'DEBUG=1', mode: 'overwrite' });
  expect(viewOf(pending)).toBe(first);
  expect(viewOf(pending)).toEqual(pendingView(pending));
});
