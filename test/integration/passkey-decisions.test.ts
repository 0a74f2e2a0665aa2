import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { generateKeyPairSync, sign } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { type DecisionPayload, type PasskeyAssertion } from '../../core/approval/approvals';
import { decisionSigningText } from '../../core/approval/decision-check';
import type { AuditEvent } from '../../core/audit/events';
import { decisionChallenge } from '../../core/approval/decision-challenge';
import type { PendingRequestView } from '../../core/job/job-view';
import { defaultRules } from '../../core/policy/default-rules';
import { ReviewerKeysFile } from '../../host/keys/reviewer-keys';
import { updateReviewerKeysFile } from '../../host/keys/reviewer-keys-file';
import { approvalDecisionSignal, decideUpdate } from '../../workflows/messages';
import { JobHarness } from '../helpers/job-harness';
import { SoftPasskey } from '../helpers/soft-passkey';

/**
 * Passkey decisions on the real dev server with the built-in rules (which
 * require signed decisions for deletes and permission changes), sent as any
 * Temporal client would send them: what an attacker holding an old or
 * someone else's assertion can try, and what the job must refuse.
 */

type Decision = Omit<DecisionPayload, 'signature' | 'passkey'>;

const alice = new SoftPasskey();
const bob = new SoftPasskey();
let keysDir: string;
let keysFile: string;
let h: JobHarness;

beforeAll(async () => {
  keysDir = mkdtempSync(join(tmpdir(), 'airlock-passkeys-'));
  keysFile = join(keysDir, 'reviewers.yaml');
  writeFileSync(keysFile, stringify({ version: 2, reviewers: { alice: { passkeys: [alice.registered()] }, bob: { passkeys: [bob.registered()] } } }));
  h = await JobHarness.create({ rules: defaultRules, reviewerKeys: ReviewerKeysFile.open(keysFile, { mustExist: true }) });
});
afterAll(async () => {
  await h.close();
  rmSync(keysDir, { recursive: true, force: true });
});
afterEach(async () => h.terminateRunning());

const deletes = (...paths: string[]) => ({
  turns: [{ tool_calls: paths.map((path) => ({ name: 'fs_delete', arguments: { path } })) }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }],
});

/** A decision on `request` as the approval page would build it, before the passkey signs it. */
function decisionOn(request: PendingRequestView, fields: Partial<Decision> = {}): Decision {
  return { requestId: request.requestId, fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve', reviewer: 'alice', ...fields };
}

/** The decision with an assertion by `passkey` over exactly it. */
function signedBy(passkey: SoftPasskey, jobId: string, decision: Decision): DecisionPayload {
  return { ...decision, passkey: passkey.assert(decisionChallenge(jobId, decision)) };
}

async function parked(jobId: string, count = 1): Promise<PendingRequestView[]> {
  return [...(await h.waitForPending(jobId, count)).pending];
}

/** Waits until the job has audited `count` events of this type (the audit is written by activities, a moment later). */
async function audited<T extends 'approval_rejected' | 'approval_fingerprint_mismatch' | 'approval_decided'>(
  jobId: string,
  type: T,
  count: number,
): Promise<Array<Extract<AuditEvent, { type: T }>>> {
  // Polls the audit alone: a job that has completed meanwhile is fine.
  for (let i = 0; i < 300 && h.audit(jobId, type).length < count; i++) await new Promise((r) => setTimeout(r, 200));
  return h.audit(jobId, type);
}

test('an approval signed by a registered passkey deletes the file exactly once and is audited as a passkey decision', async () => {
  const file = join(h.root, 'old-backup.tar');
  writeFileSync(file, 'old');
  writeFileSync(join(h.root, 'next.tar'), 'next');
  // A second delete keeps the job running (parked) while both deliveries below arrive.
  const { jobId } = await h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_delete', arguments: { path: 'old-backup.tar' } }] },
        { tool_calls: [{ name: 'fs_delete', arguments: { path: 'next.tar' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
      ],
    },
  });
  const [request] = await parked(jobId);
  expect(request).toMatchObject({ ruleId: 'approve-deletes' });

  // Unsigned, the built-in rule refuses it: the passkey is what makes the decision count.
  expect(await h.airlock.sendDecision(jobId, decisionOn(request!))).toMatchObject({ accepted: false, code: 'signature_required' });
  const payload = signedBy(alice, jobId, decisionOn(request!, { reason: 'superseded by the new backup' }));
  // Delivered twice at once (a retrying client, or an eavesdropper racing it): one counts, the other is already decided.
  const outcomes = await Promise.all([h.airlock.sendDecision(jobId, payload), h.airlock.sendDecision(jobId, payload)]);
  expect(outcomes.filter((o) => o.accepted === true)).toEqual([expect.objectContaining({ status: 'approved', editedFingerprint: null })]);
  expect(outcomes.filter((o) => o.accepted === false)).toEqual([expect.objectContaining({ code: 'already_decided' })]);

  await h.waitFor(jobId, (s) => s.pending.length === 1 && s.pending[0]?.requestId !== request!.requestId, 'the next delete parked');
  expect(existsSync(file)).toBe(false);
  expect(existsSync(join(h.root, 'next.tar'))).toBe(true);
  expect(h.toolResults(jobId).get('call_0_0')).toBe(`deleted ${file}`);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(1);
  await audited(jobId, 'approval_rejected', 2);
  expect(h.audit(jobId, 'approval_rejected').map((e) => e.data.code)).toEqual(['signature_required', 'already_decided']);
  const decided = h.audit(jobId, 'approval_decided');
  expect(decided).toHaveLength(1);
  expect(decided[0]!.data).toMatchObject({
    requestId: request!.requestId,
    decision: 'approve',
    reviewer: 'alice',
    reason: 'superseded by the new backup',
    signed: true,
    signedWith: 'passkey',
  });
});

test('an edit of an editable field signed by passkey runs the edited call, never the original', async () => {
  // The model asks to delete a folder without `recursive`, which would fail on its contents; the reviewer edits it.
  const folder = join(h.root, 'old-photos');
  mkdirSync(folder);
  writeFileSync(join(folder, 'a.jpg'), 'jpg');
  const { jobId } = await h.start({ script: deletes('old-photos') });
  const [request] = await parked(jobId);
  expect(request).toMatchObject({ ruleId: 'approve-deletes', editable: ['recursive'] });

  const edit = decisionOn(request!, { args: { recursive: true } });
  // The assertion signs the edit: the same assertion carrying another value is refused.
  const tampered = { ...signedBy(alice, jobId, edit), args: { recursive: false } };
  expect(await h.airlock.sendDecision(jobId, tampered)).toMatchObject({ accepted: false, code: 'signature_invalid' });
  expect((await h.state(jobId)).pending).toHaveLength(1);

  const outcome = await h.airlock.sendDecision(jobId, signedBy(alice, jobId, edit));
  expect(outcome).toMatchObject({ accepted: true, status: 'approved', editedFingerprint: expect.stringMatching(/^[0-9a-f]{64}$/) });
  const editedFingerprint = outcome.accepted === true ? outcome.editedFingerprint : undefined;
  expect(editedFingerprint).not.toBe(request!.fingerprint);

  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(folder)).toBe(false);
  expect(h.toolResults(jobId).get('call_0_0')).toBe(`deleted ${folder}\n(The reviewer edited recursive before approving.)`);
  // Exactly one call ran, and it was the edited one.
  expect(h.audit(jobId, 'tool_executed').map((e) => e.data.fingerprint)).toEqual([editedFingerprint]);
  expect(h.audit(jobId, 'approval_decided')[0]!.data).toMatchObject({ signedWith: 'passkey', originalFingerprint: request!.fingerprint, editedFingerprint });
  expect(h.audit(jobId, 'approval_rejected').map((e) => e.data.code)).toEqual(['signature_invalid']);
});

test('a denial with a reason signed by passkey keeps the file and tells the model the reason', async () => {
  const file = join(h.root, 'only-copy.db');
  writeFileSync(file, 'data');
  const { jobId } = await h.start({ script: deletes('only-copy.db') });
  const [request] = await parked(jobId);
  const payload = signedBy(bob, jobId, decisionOn(request!, { decision: 'deny', reviewer: 'bob', reason: 'this is the only copy' }));
  expect(await h.airlock.sendDecision(jobId, payload)).toMatchObject({ accepted: true, status: 'denied' });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(file)).toBe(true);
  expect(h.toolResults(jobId).get('call_0_0')).toBe('Not executed: bob denied this call: this is the only copy. Do not propose it again unchanged.');
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(0);
  expect(h.audit(jobId, 'approval_decided')[0]!.data).toMatchObject({ decision: 'deny', reviewer: 'bob', reason: 'this is the only copy', signedWith: 'passkey' });
});

test('replayed, altered, foreign, oversized and doubly signed passkey decisions are all rejected and audited; nothing runs; the requests can still be approved', async () => {
  for (const name of ['a.txt', 'b.txt', 'c.txt']) writeFileSync(join(h.root, name), name);
  // Job A parks two deletes in one batch; job B one.
  const a = await h.start({ script: deletes('a.txt', 'b.txt') });
  const [a1, a2] = await parked(a.jobId, 2);
  const b = await h.start({ script: deletes('c.txt') });
  const [b1] = await parked(b.jobId);

  // What alice really approved: a.txt in job A, with this reason.
  const approveA1 = decisionOn(a1!, { reason: 'old copy' });
  const { reason: _reason, ...withoutReason } = approveA1;
  const genuine = signedBy(alice, a.jobId, approveA1);
  const assertion = genuine.passkey!;
  const mallory = new SoftPasskey();
  const edKey = generateKeyPairSync('ed25519');
  const huge: PasskeyAssertion = { ...assertion, clientDataJSON: 'A'.repeat(1_048_576) };

  const attemptsOnA: Array<[string, DecisionPayload, string]> = [
    ['replayed on the other request of the batch', { ...decisionOn(a2!, { reason: 'old copy' }), passkey: assertion }, 'signature_invalid'],
    ['reason changed after signing', { ...genuine, reason: 'alice says go ahead with everything' }, 'signature_invalid'],
    ['reason dropped after signing', { ...withoutReason, passkey: assertion }, 'signature_invalid'],
    ['approve turned into deny', { ...genuine, decision: 'deny' }, 'signature_invalid'],
    ['an edit added after signing', { ...genuine, args: { recursive: true } }, 'signature_invalid'],
    ['an unregistered authenticator', signedBy(mallory, a.jobId, approveA1), 'signature_invalid'],
    ["an unregistered key under alice's credential id", { ...approveA1, passkey: { ...mallory.assert(decisionChallenge(a.jobId, approveA1)), credentialId: alice.id } }, 'signature_invalid'],
    ["bob's passkey for reviewer alice", signedBy(bob, a.jobId, approveA1), 'signature_invalid'],
    ["alice's assertion claimed by bob", { ...approveA1, reviewer: 'bob', passkey: assertion }, 'signature_invalid'],
    ['made on another site', { ...approveA1, passkey: alice.assert(decisionChallenge(a.jobId, approveA1), { origin: 'https://airlock.example.net' }) }, 'signature_invalid'],
    ['a megabyte in the assertion', { ...approveA1, passkey: huge }, 'invalid_payload'],
    [
      'a passkey and a signature together',
      { ...genuine, signature: sign(null, Buffer.from(decisionSigningText(a.jobId, approveA1)), edKey.privateKey).toString('base64') },
      'invalid_payload',
    ],
  ];
  const outcomes: Array<[string, unknown]> = [];
  for (const [what, payload] of attemptsOnA) {
    const outcome = await h.airlock.sendDecision(a.jobId, payload);
    outcomes.push([what, outcome.accepted === false ? outcome.code : outcome]);
  }
  expect(outcomes).toEqual(attemptsOnA.map(([what, , code]) => [what, code]));
  // The megabyte was reported to the job by its ids alone: the rejection is audited, the history does not keep it.
  expect(historyToJSON(await h.env.client.workflow.getHandle(a.jobId).fetchHistory()).length).toBeLessThan(256 * 1024);

  // The same assertion in another job: re-addressed to B's request it does not verify; sent as it was, it matches nothing in B.
  expect(await h.airlock.sendDecision(b.jobId, { ...decisionOn(b1!, { reason: 'old copy' }), passkey: assertion })).toMatchObject({ accepted: false, code: 'signature_invalid' });
  const moved = await h.airlock.sendDecision(b.jobId, genuine);
  expect(moved).toMatchObject({ accepted: false, code: expect.stringMatching(/^(unknown_request|fingerprint_mismatch)$/) });
  // Through a bare Temporal signal, without the airlock client: refused and audited the same way.
  await h.env.client.workflow.getHandle(b.jobId).signal(approvalDecisionSignal, { ...genuine, requestId: b1!.requestId, fingerprint: b1!.fingerprint, nonce: b1!.nonce });

  const rejectedOnA = await audited(a.jobId, 'approval_rejected', attemptsOnA.length);
  expect(rejectedOnA.map((e) => e.data.code)).toEqual(attemptsOnA.map(([, , code]) => code));
  expect(rejectedOnA.every((e) => e.data.requestId === a1!.requestId || e.data.requestId === a2!.requestId)).toBe(true);
  const rejectedOnB = await audited(b.jobId, 'approval_rejected', 2);
  expect(rejectedOnB.map((e) => [e.data.code, e.data.via])).toEqual([
    ['signature_invalid', 'update'],
    ['signature_invalid', 'signal'],
  ]);
  expect((await audited(b.jobId, 'approval_fingerprint_mismatch', 1)).map((e) => e.data.code)).toEqual([moved.accepted === false ? moved.code : '']);

  // Nothing ran, nothing was decided, both jobs still wait.
  for (const name of ['a.txt', 'b.txt', 'c.txt']) expect(existsSync(join(h.root, name))).toBe(true);
  expect((await h.state(a.jobId)).pending.map((r) => r.requestId)).toEqual([a1!.requestId, a2!.requestId]);
  expect((await h.state(b.jobId)).pending.map((r) => r.requestId)).toEqual([b1!.requestId]);
  for (const job of [a.jobId, b.jobId]) {
    expect(h.audit(job, 'approval_decided')).toHaveLength(0);
    expect(h.audit(job, 'tool_executed')).toHaveLength(0);
  }

  // The genuine decision still counts, once; a second delivery is already decided.
  expect(await h.airlock.sendDecision(a.jobId, genuine)).toMatchObject({ accepted: true, status: 'approved' });
  expect(await h.airlock.sendDecision(a.jobId, genuine)).toMatchObject({ accepted: false, code: 'already_decided' });
  // The other request needs its own assertion; here by a raw update from a bare Temporal client.
  const approveA2 = signedBy(alice, a.jobId, decisionOn(a2!));
  await expect(h.env.client.workflow.getHandle(a.jobId).executeUpdate(decideUpdate, { args: [approveA2] })).resolves.toMatchObject({ status: 'approved' });
  expect(await h.result(a.jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(join(h.root, 'a.txt'))).toBe(false);
  expect(existsSync(join(h.root, 'b.txt'))).toBe(false);
  expect(h.audit(a.jobId, 'tool_executed')).toHaveLength(2);
  expect(h.audit(a.jobId, 'approval_decided').map((e) => [e.data.requestId, e.data.signedWith])).toEqual([
    [a1!.requestId, 'passkey'],
    [a2!.requestId, 'passkey'],
  ]);

  expect(await h.airlock.sendDecision(b.jobId, signedBy(bob, b.jobId, decisionOn(b1!, { reviewer: 'bob' })))).toMatchObject({ accepted: true });
  expect(await h.result(b.jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(join(h.root, 'c.txt'))).toBe(false);
  expect(h.audit(b.jobId, 'tool_executed')).toHaveLength(1);
});

test('a passkey registered while the worker runs counts without a restart', async () => {
  const file = join(h.root, 'carol.tmp');
  writeFileSync(file, 'x');
  const carol = new SoftPasskey();
  const { jobId } = await h.start({ script: deletes('carol.tmp') });
  const [request] = await parked(jobId);
  const payload = signedBy(carol, jobId, decisionOn(request!, { reviewer: 'carol' }));
  expect(await h.airlock.sendDecision(jobId, payload)).toMatchObject({ accepted: false, code: 'signature_invalid', reason: 'no passkey is registered for reviewer carol' });
  expect(existsSync(file)).toBe(true);

  // As a registration on the approval page writes it: under the lock, renamed into place.
  updateReviewerKeysFile(keysFile, (entries) => ({ ...entries, carol: { passkeys: [carol.registered()] } }));
  expect(await h.airlock.sendDecision(jobId, payload)).toMatchObject({ accepted: true, status: 'approved' });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(file)).toBe(false);
  expect(h.audit(jobId, 'approval_rejected').map((e) => e.data.code)).toEqual(['signature_invalid']);
  expect(h.audit(jobId, 'approval_decided')[0]!.data).toMatchObject({ reviewer: 'carol', signedWith: 'passkey' });
});

test('a keys file that turns unreadable fails closed: passkey decisions are rejected until it is fixed', async () => {
  const file = join(h.root, 'broken-keys.tmp');
  writeFileSync(file, 'x');
  const { jobId } = await h.start({ script: deletes('broken-keys.tmp') });
  const [request] = await parked(jobId);
  const payload = signedBy(alice, jobId, decisionOn(request!));
  const good = readFileSync(keysFile, 'utf8');
  try {
    writeFileSync(keysFile, 'version: 2\nreviewers: {alice: {passkeys: [{id: "!!"}]}}\n');
    // Refused at once with what to fix (retrying cannot mend the file), a rejection rather than a failed job.
    expect(await h.airlock.sendDecision(jobId, payload)).toMatchObject({ accepted: false, code: 'signature_invalid', reason: expect.stringMatching(/could not be verified: .*reviewer keys/) });
    expect(existsSync(file)).toBe(true);
    expect((await h.state(jobId)).pending).toHaveLength(1);
  } finally {
    writeFileSync(keysFile, good);
  }
  expect(await h.airlock.sendDecision(jobId, payload)).toMatchObject({ accepted: true });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(file)).toBe(false);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(1);
});
