import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decisionSigningText } from '../../core/approval/decision-check';
import type { DecisionPayload } from '../../core/approval/approvals';
import type { AgentJobStateView } from '../../core/job/job-view';
import { sendDecision } from '../../client/airlock-client/deciding';
import { JobHarness } from '../helpers/job-harness';

/**
 * Standing approvals on a real Temporal server with real workers, files
 * and the agent worker's store: one signed approval covers later calls of
 * the exact same operation, and nothing else.
 */

const DAY = 86_400_000;

const appendRule = (version: number, standing: { maxFor: string; maxUses: number; varies: string[] } | null = { maxFor: '30d', maxUses: 5, varies: ['content'] }) => ({
  version: 1 as const,
  rules: [
    {
      id: 'approve-log-appends',
      version,
      name: 'Appending to logs needs approval',
      scope: { tools: ['fs_write' as const] },
      action: 'request_approval' as const,
      approval: { ...(standing !== null ? { standing } : {}) },
    },
  ],
});

const appendThenComplete = (path: string, content: string) => ({
  turns: [
    { tool_calls: [{ name: 'fs_write', arguments: { path, content, mode: 'append' } }] },
    { tool_calls: [{ name: 'complete', arguments: { summary: 'appended' } }] },
  ],
});

let h: JobHarness;
let alice: { privateKey: KeyObject; publicKey: KeyObject };
let keys: Map<string, KeyObject>;

beforeAll(async () => {
  alice = generateKeyPairSync('ed25519');
  keys = new Map([['alice', alice.publicKey]]);
  h = await JobHarness.create({ reviewerKeys: keys, rules: appendRule(1) });
  mkdirSync(join(h.root, 'logs'));
  mkdirSync(join(h.root, 'elsewhere'));
  symlinkSync('logs', join(h.root, 'logs-alias'));
  writeFileSync(join(h.root, 'logs', 'app.log'), 'start\n');
  writeFileSync(join(h.root, 'logs', 'app.log.1'), 'old\n');
  writeFileSync(join(h.root, 'elsewhere', 'app.log'), 'other\n');
});
afterAll(async () => h.close());
afterEach(async () => {
  await h.terminateRunning();
  // Each test starts with no standing approval in force.
  for (const v of await h.standing.list({ all: false, now: Date.now() })) await h.standing.revoke(v.record.id, 'test', 'next test', Date.now());
  h.setRules(appendRule(1));
  keys.set('alice', alice.publicKey);
});

/** Starts a job appending `content` and waits until it parks (then returns its view) or ends (then returns undefined). */
async function appendJob(path: string, content: string, requester = 'nightly'): Promise<{ jobId: string; parked: AgentJobStateView | undefined }> {
  const { jobId } = await h.start({ script: appendThenComplete(path, content), input: { requester } });
  const view = await h.waitFor(jobId, (s) => s.pending.length > 0 || s.status === 'completed' || s.status === 'failed', 'a park or the end');
  return { jobId, parked: view.pending.length > 0 ? view : undefined };
}

/** Approves the one pending request, standing for `forMs` and `uses`, signed by alice; the standing approval's id. */
async function approveStanding(jobId: string, forMs = 7 * DAY, uses = 3): Promise<string> {
  const outcome = await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice', signingKey: alice.privateKey, standing: { forMs, uses } });
  if (outcome.accepted !== true || outcome.standing?.kept !== true) throw new Error(`not kept: ${JSON.stringify(outcome)}`);
  await h.result(jobId);
  return outcome.standing.id;
}

test('one signed approval with --also-for covers the same append again, also through a linked folder, and says so; another file, requester or revoked approval asks again', async () => {
  const first = await appendJob('logs/app.log', 'night 1\n');
  const card = first.parked?.pending[0];
  expect(card?.standing).toEqual({ maxForMs: 30 * DAY, maxUses: 5, varies: ['content'], rules: [{ id: 'approve-log-appends', version: 1 }] });
  // The card says what a standing approval would cover before anyone approves.
  const shown = await h.cli(['show', first.jobId]);
  expect(shown.stdout).toContain('A standing approval would also cover later fs_write calls by nightly on the same real target(s) with the same arguments but content');
  expect(shown.stdout).toContain(`approve ${first.jobId} --request ${card?.requestId} --also-for 7d --uses 5`);
  const id = await approveStanding(first.jobId);
  expect(h.audit(first.jobId, 'standing_granted')).toEqual([expect.objectContaining({ data: expect.objectContaining({ standingId: id, reviewer: 'alice', uses: 3 }) })]);

  // Night 2: the same operation with other content runs with nobody asked.
  const second = await appendJob('logs/app.log', 'night 2\n');
  expect(second.parked).toBeUndefined();
  expect((await h.result(second.jobId)).status).toBe('completed');
  expect(h.audit(second.jobId, 'approval_requested')).toEqual([]);
  expect(h.audit(second.jobId, 'standing_used')).toEqual([expect.objectContaining({ data: expect.objectContaining({ standingId: id, reviewer: 'alice', use: 1, uses: 3 }) })]);
  expect((await h.cli(['show', second.jobId])).stdout).toMatch(new RegExp(`approved fs_write \\(request [^)]+\\) by alice: ran under standing approval ${id} by alice, 2 of 3 left, until .* UTC — executed`));

  // The same file spelled through a linked folder is the same real place.
  const third = await appendJob('logs-alias/app.log', 'night 3\n');
  expect(third.parked).toBeUndefined();
  await h.result(third.jobId);
  expect(readFileSync(join(h.root, 'logs', 'app.log'), 'utf8')).toBe('start\nnight 1\nnight 2\nnight 3\n');

  // A file with a similar name, the same name in another folder, another requester: a person is asked.
  for (const [path, requester] of [
    ['logs/app.log.1', 'nightly'],
    ['elsewhere/app.log', 'nightly'],
    ['logs/app.log', 'someone-else'],
  ] as const) {
    const other = await appendJob(path, 'x\n', requester);
    expect(other.parked?.pending).toHaveLength(1);
  }
  // The alias now leads elsewhere: by its real place it is another file.
  rmSync(join(h.root, 'logs-alias'));
  symlinkSync('elsewhere', join(h.root, 'logs-alias'));
  const swapped = await appendJob('logs-alias/app.log', 'x\n');
  expect(swapped.parked?.pending).toHaveLength(1);
  expect(h.audit(swapped.jobId, 'standing_declined')).toEqual([expect.objectContaining({ data: expect.objectContaining({ standingId: id, why: 'another target (by its real place)' }) })]);
  rmSync(join(h.root, 'logs-alias'));
  symlinkSync('logs', join(h.root, 'logs-alias'));

  // Revoked from the CLI: the next call asks, and the revocation is audited.
  const revoked = await h.cli(['standing', 'revoke', id, '--reason', 'log moved', '--reviewer', 'bob']);
  expect(revoked).toMatchObject({ code: 0 });
  expect(revoked.stdout).toContain(`revoked standing approval ${id}`);
  const listed = JSON.parse((await h.cli(['standing', 'list', '--all', '--json'])).stdout) as Array<{ id: string; state: string; used: number }>;
  expect(listed.find((s) => s.id === id)).toMatchObject({ state: 'revoked', used: 2 });
  const after = await appendJob('logs/app.log', 'night 4\n');
  expect(after.parked?.pending).toHaveLength(1);
  expect(h.audit(after.jobId, 'standing_used')).toEqual([]);
  expect((await h.cli(['standing', 'show', id])).stdout).toContain('revoked');
});

test('concurrent calls take exactly the uses left; an exhausted, expired or no longer verifiable approval covers nothing', async () => {
  const first = await appendJob('logs/app.log', 'a\n');
  expect(first.parked).toBeDefined();
  const id = await approveStanding(first.jobId, 7 * DAY, 3);
  const jobs = await Promise.all(Array.from({ length: 6 }, (_, i) => appendJob('logs/app.log', `c${i}\n`)));
  expect(jobs.filter((j) => j.parked === undefined)).toHaveLength(3);
  expect(jobs.filter((j) => j.parked !== undefined)).toHaveLength(3);
  const uses = jobs.flatMap((j) => h.audit(j.jobId, 'standing_used').map((e) => e.data.use));
  expect(uses.sort()).toEqual([1, 2, 3]);
  expect((await h.standing.get(id))?.used).toBe(3);

  // A standing approval whose reviewer's key is gone no longer verifies: nothing runs under it.
  const second = await appendJob('logs/app.log', 'b\n');
  const other = await approveStanding(second.jobId, 7 * DAY, 3);
  keys.delete('alice');
  const unverified = await appendJob('logs/app.log', 'd\n');
  expect(unverified.parked).toBeDefined();
  expect(h.audit(unverified.jobId, 'standing_declined').map((e) => e.data.standingId)).toContain(other);

  // Expired: an approval standing for two seconds covers nothing after them.
  keys.set('alice', alice.publicKey);
  await h.standing.revoke(other, 'test', 'out of the way', Date.now());
  const third = await appendJob('logs/app.log', 'e\n');
  await approveStanding(third.jobId, 2_000, 3);
  await new Promise((r) => setTimeout(r, 2_500));
  const late = await appendJob('logs/app.log', 'f\n');
  expect(late.parked).toBeDefined();
});

test('a rule version change, or a rule without standing, ends what a standing approval covers', async () => {
  const first = await appendJob('logs/app.log', 'v1\n');
  await approveStanding(first.jobId);
  h.setRules(appendRule(2));
  const changed = await appendJob('logs/app.log', 'v2\n');
  expect(changed.parked).toBeDefined();
  expect(changed.parked?.pending[0]?.standing?.rules).toEqual([{ id: 'approve-log-appends', version: 2 }]);
  h.setRules(appendRule(1, null));
  const none = await appendJob('logs/app.log', 'v1 again\n');
  expect(none.parked?.pending[0]?.standing).toBeUndefined();
  expect(await h.airlock.decide(none.jobId, { decision: 'approve', reviewer: 'alice', signingKey: alice.privateKey, standing: { forMs: DAY, uses: 1 } })).toMatchObject({
    accepted: false,
    code: 'standing_not_allowed',
  });
});

test('forged standing approvals from a raw Temporal client: unsigned, widened after signing, beyond the rule, on a denial — each rejected, none kept', async () => {
  const { jobId, parked } = await appendJob('logs/app.log', 'forged\n');
  const request = parked?.pending[0];
  if (request === undefined) throw new Error('not parked');
  const base: DecisionPayload = { requestId: request.requestId, fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve', reviewer: 'alice' };
  const signed = (payload: DecisionPayload): DecisionPayload => ({ ...payload, signature: sign(null, Buffer.from(decisionSigningText(jobId, payload)), alice.privateKey).toString('base64') });
  const until = Date.now() + DAY;

  expect(await sendDecision(h.airlock.client, jobId, { ...base, standing: { until, uses: 2 } })).toMatchObject({ accepted: false, code: 'standing_unsigned' });
  const small = signed({ ...base, standing: { until, uses: 1 } });
  expect(await sendDecision(h.airlock.client, jobId, { ...small, standing: { until, uses: 5 } })).toMatchObject({ accepted: false, code: 'signature_invalid' });
  expect(await sendDecision(h.airlock.client, jobId, { ...small, standing: { until: until + 20 * DAY, uses: 1 } })).toMatchObject({ accepted: false, code: 'signature_invalid' });
  expect(await sendDecision(h.airlock.client, jobId, signed({ ...base, standing: { until, uses: 6 } }))).toMatchObject({ accepted: false, code: 'standing_not_allowed' });
  expect(await sendDecision(h.airlock.client, jobId, signed({ ...base, standing: { until: Date.now() + 40 * DAY, uses: 1 } }))).toMatchObject({ accepted: false, code: 'standing_not_allowed' });
  expect(await sendDecision(h.airlock.client, jobId, signed({ ...base, decision: 'deny', reason: 'no', standing: { until, uses: 1 } }))).toMatchObject({ accepted: false, code: 'standing_not_allowed' });
  expect(await h.standing.list({ all: true, now: Date.now() })).toEqual(expect.not.arrayContaining([expect.objectContaining({ record: expect.objectContaining({ origin: expect.objectContaining({ jobId }) }) })]));
  // The rejections are audited (the client reports what the validator refused), and the request still waits.
  await h.waitFor(jobId, () => h.audit(jobId, 'approval_rejected').length >= 6, 'six audited rejections');
  expect((await h.state(jobId)).pending).toHaveLength(1);
  // Signed as it is, it is kept: the scope is the job's own request, whatever a client says.
  expect(await sendDecision(h.airlock.client, jobId, signed({ ...base, standing: { until, uses: 1 } }))).toMatchObject({ accepted: true, standing: { kept: true, uses: 1 } });
});
