import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createReviewerActivities } from '../../activities/verify-decision';
import type { DecisionPayload, PasskeyAssertion } from '../../core/approval/approvals';
import { decisionChallenge } from '../../core/approval/decision-challenge';
import { ReviewerKeysFile } from '../../host/keys/reviewer-keys';
import { SoftPasskey } from '../helpers/soft-passkey';

/*
 * Assertions an attacker could send to the reviewer activity: user handles
 * that name someone else, one credential id under two keys, a registration's
 * client data, a framed page. Identity comes from the reviewer's registered
 * credential and its key alone.
 */

const JOB = 'job-1';
const asAlice: DecisionPayload = { requestId: 'req-1', fingerprint: 'a'.repeat(64), nonce: 'b'.repeat(32), decision: 'approve', reviewer: 'alice' };
const asBob: DecisionPayload = { ...asAlice, reviewer: 'bob' };
const ORIGIN = 'http://localhost:7244';
const alice = new SoftPasskey('localhost', ORIGIN);
/** Mallory's own key under alice's credential id. */
const mallory = new SoftPasskey('localhost', ORIGIN, alice.id);
const handle = (reviewer: string) => createHash('sha256').update(`airlock-reviewer:${reviewer}`).digest().toString('base64url');

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-verify-attack-'));
  file = join(dir, 'reviewers.yaml');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function verify(reviewers: Record<string, unknown>, payload: DecisionPayload, assertion: PasskeyAssertion) {
  writeFileSync(file, stringify({ version: 2, reviewers }));
  return createReviewerActivities({ reviewerKeys: ReviewerKeysFile.open(file, { mustExist: true }) }).verifyDecision({ jobId: JOB, payload: { ...payload, passkey: assertion } });
}

test("a user handle naming bob (it is not signed) does not let alice's passkey decide as bob", async () => {
  const files = { alice: { passkeys: [alice.registered()] }, bob: { passkeys: [new SoftPasskey('localhost', ORIGIN).registered()] } };
  for (const userHandle of [handle('bob'), handle('alice'), 'AAAA']) {
    expect((await verify(files, asBob, alice.assert(decisionChallenge(JOB, asBob), { userHandle }))).valid).toBe(false);
    // For alice herself the handle changes nothing either way: it is not what proves who signed.
    expect(await verify(files, asAlice, alice.assert(decisionChallenge(JOB, asAlice), { userHandle }))).toEqual({ valid: true });
  }
});

test('one credential id under two keys: each key decides only as the reviewer it is registered for', async () => {
  const files = { alice: { passkeys: [alice.registered()] }, bob: { passkeys: [mallory.registered()] } };
  expect((await verify(files, asAlice, mallory.assert(decisionChallenge(JOB, asAlice)))).valid).toBe(false);
  expect((await verify(files, asBob, alice.assert(decisionChallenge(JOB, asBob)))).valid).toBe(false);
  expect(await verify(files, asBob, mallory.assert(decisionChallenge(JOB, asBob)))).toEqual({ valid: true });
  // Twice under alice, hers first: the second key (Mallory's) is not tried.
  expect((await verify({ alice: { passkeys: [alice.registered(), mallory.registered()] } }, asAlice, mallory.assert(decisionChallenge(JOB, asAlice)))).valid).toBe(false);
});

test("a registration's client data, or a page framed by another site, is not an assertion", async () => {
  const files = { alice: { passkeys: [alice.registered()] } };
  const resign = (clientData: Record<string, unknown>) => alice.assert('', { clientData });
  const challenge = decisionChallenge(JOB, asAlice);
  // The re-signing itself is sound: the same client data verifies.
  expect(await verify(files, asAlice, resign({ type: 'webauthn.get', challenge, origin: ORIGIN, crossOrigin: false }))).toEqual({ valid: true });
  expect((await verify(files, asAlice, resign({ type: 'webauthn.create', challenge, origin: ORIGIN, crossOrigin: false }))).valid).toBe(false);
  expect((await verify(files, asAlice, resign({ type: 'webauthn.get', challenge, origin: ORIGIN, crossOrigin: true, topOrigin: 'https://attacker.example' }))).valid).toBe(false);
  expect((await verify(files, asAlice, resign({ type: 'webauthn.get', challenge: challenge.toUpperCase(), origin: ORIGIN }))).valid).toBe(false);
});
