import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { type DecisionPayload } from '../../core/approval/approvals';
import { decisionSigningText } from '../../core/approval/decision-check';
import { decisionChallenge } from '../../core/approval/decision-challenge';
import { createReviewerActivities } from '../../activities/verify-decision';
import { ReviewerKeysFile } from '../../host/keys/reviewer-keys';
import { readReviewerKeysFile, updateReviewerKeysFile } from '../../host/keys/reviewer-keys-file';
import { SoftPasskey } from '../helpers/soft-passkey';
import { SqlitePasskeyCounters } from '../../host/stores/passkey-counters/sqlite';

const JOB = 'job-1';
const decision: DecisionPayload = {
  requestId: 'req-1',
  fingerprint: 'a'.repeat(64),
  nonce: 'b'.repeat(32),
  decision: 'approve',
  reviewer: 'alice',
  reason: 'looks right',
};

let dir: string;
let file: string;
const alice = new SoftPasskey();

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-verify-'));
  file = join(dir, 'reviewers.yaml');
  writeFileSync(file, stringify({ version: 2, reviewers: { alice: { passkeys: [alice.registered()] } } }));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function verifier() {
  return createReviewerActivities({ reviewerKeys: ReviewerKeysFile.open(file, { mustExist: true }) });
}

const withPasskey = (payload: DecisionPayload, assertion = alice.assert(decisionChallenge(JOB, payload))): DecisionPayload => ({ ...payload, passkey: assertion });

test('a passkey assertion over the decision itself verifies', async () => {
  await expect(verifier().verifyDecision({ jobId: JOB, payload: withPasskey(decision) })).resolves.toEqual({ valid: true });
});

test.each<[string, (p: DecisionPayload) => DecisionPayload]>([
  ['another request', (p) => ({ ...p, requestId: 'req-2' })],
  ['another fingerprint', (p) => ({ ...p, fingerprint: 'c'.repeat(64) })],
  ['another nonce', (p) => ({ ...p, nonce: 'd'.repeat(32) })],
  ['deny instead of approve', (p) => ({ ...p, decision: 'deny' })],
  ['an edit added', (p) => ({ ...p, args: { path: 'other.txt' } })],
  ['another reason', (p) => ({ ...p, reason: 'changed' })],
  ['no reason', ({ reason: _r, ...p }) => p],
])('an assertion moved to %s does not verify', async (_name, alter) => {
  const assertion = alice.assert(decisionChallenge(JOB, decision));
  const result = await verifier().verifyDecision({ jobId: JOB, payload: { ...alter(decision), passkey: assertion } });
  expect(result).toMatchObject({ valid: false, reason: expect.stringMatching(/does not verify with alice's passkey/) });
});

test('an assertion made for another job does not verify', async () => {
  const result = await verifier().verifyDecision({ jobId: 'job-2', payload: withPasskey(decision) });
  expect(result.valid).toBe(false);
});

test('another reviewer cannot claim alice\'s assertion', async () => {
  writeFileSync(file, stringify({ version: 2, reviewers: { alice: { passkeys: [alice.registered()] }, bob: { passkeys: [{ ...alice.registered() }] } } }));
  const assertion = alice.assert(decisionChallenge(JOB, decision));
  expect((await verifier().verifyDecision({ jobId: JOB, payload: { ...decision, reviewer: 'bob', passkey: assertion } })).valid).toBe(false);
});

test('an unregistered authenticator, another origin or RP, and no user verification are refused', async () => {
  const mallory = new SoftPasskey();
  const challenge = decisionChallenge(JOB, decision);
  const v = verifier();
  expect(await v.verifyDecision({ jobId: JOB, payload: withPasskey(decision, mallory.assert(challenge)) })).toMatchObject({ valid: false, reason: expect.stringMatching(/not one of alice's registered passkeys/) });
  // Mallory's key under alice's credential id: the signature is checked against alice's key.
  const forged = { ...mallory.assert(challenge), credentialId: alice.id };
  expect((await v.verifyDecision({ jobId: JOB, payload: withPasskey(decision, forged) })).valid).toBe(false);
  expect((await v.verifyDecision({ jobId: JOB, payload: withPasskey(decision, alice.assert(challenge, { origin: 'https://evil.example' })) })).valid).toBe(false);
  expect((await v.verifyDecision({ jobId: JOB, payload: withPasskey(decision, alice.assert(challenge, { rpId: 'evil.example' })) })).valid).toBe(false);
  expect(await v.verifyDecision({ jobId: JOB, payload: withPasskey(decision, alice.assert(challenge, { userVerified: false })) })).toMatchObject({ valid: false, reason: expect.stringMatching(/user/i) });
  expect(await v.verifyDecision({ jobId: JOB, payload: withPasskey({ ...decision, reviewer: 'carol' }) })).toMatchObject({ valid: false, reason: 'no passkey is registered for reviewer carol' });
});

test('garbage in the assertion is a refusal, not a crash', async () => {
  const good = alice.assert(decisionChallenge(JOB, decision));
  for (const broken of [
    { ...good, authenticatorData: 'AAAA' },
    { ...good, clientDataJSON: Buffer.from('{"type":').toString('base64url') },
    { ...good, signature: 'AAAA' },
  ]) {
    expect((await verifier().verifyDecision({ jobId: JOB, payload: withPasskey(decision, broken) })).valid).toBe(false);
  }
});

test('a passkey registered while the worker runs counts without a restart; an Ed25519 key in a version 1 file still verifies', async () => {
  const ed = generateKeyPairSync('ed25519');
  writeFileSync(file, stringify({ version: 1, reviewers: { alice: ed.publicKey.export({ type: 'spki', format: 'pem' }) } }));
  const v = verifier();
  const signature = sign(null, Buffer.from(decisionSigningText(JOB, decision)), ed.privateKey).toString('base64');
  await expect(v.verifyDecision({ jobId: JOB, payload: { ...decision, signature } })).resolves.toEqual({ valid: true });
  expect((await v.verifyDecision({ jobId: JOB, payload: withPasskey(decision) })).valid).toBe(false);
  updateReviewerKeysFile(file, (entries) => ({ ...entries, alice: { ...entries.alice, passkeys: [alice.registered()] } }));
  // Same size and second is possible on a fast machine; the inode changes with the rename anyway.
  utimesSync(file, new Date(), new Date(Date.now() + 5_000));
  await expect(v.verifyDecision({ jobId: JOB, payload: withPasskey(decision) })).resolves.toEqual({ valid: true });
  await expect(v.verifyDecision({ jobId: JOB, payload: { ...decision, signature } })).resolves.toEqual({ valid: true });
  expect(readReviewerKeysFile(file).alice?.key).toContain('BEGIN PUBLIC KEY');
});

test('a keys file that turns invalid fails verification closed', async () => {
  const v = verifier();
  writeFileSync(file, 'version: 2\nreviewers: {alice: {passkeys: [{id: "!!"}]}}\n');
  utimesSync(file, new Date(), new Date(Date.now() + 10_000));
  await expect(v.verifyDecision({ jobId: JOB, payload: withPasskey(decision) })).resolves.toEqual({
    valid: false,
    reason: expect.stringMatching(/^the decision could not be verified: reviewer keys .*reviewers\.alice\.passkeys.*fix the file, then decide again$/),
  });
});

describe('signature counters', () => {
  const counted = () => {
    const counters = new SqlitePasskeyCounters(join(dir, 'counters.sqlite'));
    return { counters, activities: createReviewerActivities({ reviewerKeys: ReviewerKeysFile.open(file, { mustExist: true }), passkeyCounters: counters }) };
  };
  const withCounter = (counter: number, payload: DecisionPayload = decision) => withPasskey(payload, alice.assert(decisionChallenge(JOB, payload), { counter }));

  test('a counter that goes up is accepted each time; the same assertion again (a retried activity) still verifies', async () => {
    const { counters, activities } = counted();
    const first = withCounter(10);
    await expect(activities.verifyDecision({ jobId: JOB, payload: first })).resolves.toEqual({ valid: true });
    await expect(activities.verifyDecision({ jobId: JOB, payload: first })).resolves.toEqual({ valid: true });
    await expect(activities.verifyDecision({ jobId: JOB, payload: withCounter(11, { ...decision, requestId: 'req-2' }) })).resolves.toEqual({ valid: true });
    expect(await counters.last(alice.id)).toMatchObject({ counter: 11 });
    await counters.close();
  });

  test('a counter that stands still or goes back (a copy of the credential) is refused, saying why', async () => {
    const { counters, activities } = counted();
    await expect(activities.verifyDecision({ jobId: JOB, payload: withCounter(20) })).resolves.toEqual({ valid: true });
    for (const counter of [20, 19, 1]) {
      const result = await activities.verifyDecision({ jobId: JOB, payload: withCounter(counter, { ...decision, requestId: `clone-${counter}` }) });
      expect(result).toMatchObject({ valid: false, reason: expect.stringMatching(/signature counter that is not above the last one accepted \(20\): a copy of the credential may be in use/) });
    }
    await counters.close();
  });

  test('an authenticator that does not count (always 0) is not tracked', async () => {
    const { counters, activities } = counted();
    for (const requestId of ['a', 'b']) await expect(activities.verifyDecision({ jobId: JOB, payload: withCounter(0, { ...decision, requestId }) })).resolves.toEqual({ valid: true });
    expect(await counters.last(alice.id)).toBeUndefined();
    await counters.close();
  });
});
