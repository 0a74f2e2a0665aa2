import { generateKeyPairSync } from 'node:crypto';
import { decideBatch, type EvaluatePolicyInput } from '../../activities/policy';
import { stateFingerprint } from '../../core/approval/fingerprint';
import { defaultRules } from '../../core/policy/default-rules';
import { buildSnapshot } from '../../core/policy/snapshot';
import { preflight, type PreflightedCall } from '../../core/job/preflight';
import { parseRulesDocument } from '../../host/config/rules-file';
import { createSealer } from '../../host/keys/seal';

// decideBatch hashes each call once and hands the fingerprints to the plan: they must stay each call's own.
const sealer = createSealer(generateKeyPairSync('ed25519').privateKey);
const snapshot = buildSnapshot(parseRulesDocument(defaultRules, 'built-in'), 'built-in');
const read = (id: string, path: string) => preflight({ id, name: 'fs_read', arguments: JSON.stringify({ path }) }, ['fs_read']);

function planned(calls: PreflightedCall[]): Array<{ callId: string; fingerprint: string | undefined }> {
  const input: EvaluatePolicyInput = {
    jobId: 'job-1',
    scope: { movement: 'tidy' },
    snapshot,
    policySeal: sealer.seal('policy', 'job-1', snapshot),
    calls,
    memory: { deniedFingerprints: [], redirectedFingerprints: [], approvalRequests: 0, maxApprovalRequests: 5, completionRuleFires: [] },
    ruleCounters: {},
    now: 0,
  };
  const plan = decideBatch(sealer, input).plan;
  return (plan?.calls ?? []).map((p) => ({ callId: p.call.callId, fingerprint: 'fingerprint' in p ? p.fingerprint : undefined }));
}

test.each([
  ['distinct ids', [read('c1', 'a.txt'), read('c2', 'b.txt'), read('c3', 'a.txt')]],
  ['an id the model repeated', [read('c1', 'a.txt'), read('c1', 'b.txt')]],
])('every call of a plan carries its own state fingerprint (%s)', (_label, calls) => {
  const expected = calls.map((c) => ({ callId: c.callId, fingerprint: c.kind === 'tool' ? stateFingerprint('job-1', { movement: 'tidy' }, c) : undefined }));
  expect(new Set(expected.map((e) => e.fingerprint)).size).toBeGreaterThan(1);
  expect(planned(calls)).toEqual(expected);
});
