import { generateKeyPairSync } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createPolicyActivities, type EvaluatePolicyInput, type EvaluatePolicyResult } from '../../activities/policy';
import { FailureTypes } from '../../core/temporal/failure-types';
import { defaultRules } from '../../core/policy/default-rules';
import { buildSnapshot } from '../../core/policy/snapshot';
import { preflight } from '../../core/job/preflight';
import { createGrantSigner } from '../../host/keys/grant-keys';
import { parseRulesDocument } from '../../host/config/rules-file';
import { createSealer } from '../../host/keys/seal';

const keys = generateKeyPairSync('ed25519');
const snapshot = buildSnapshot(parseRulesDocument(defaultRules, 'built-in'), 'built-in');
const activities = createPolicyActivities({
  loadSnapshot: async () => snapshot,
  signer: createGrantSigner(keys.privateKey),
  sealer: createSealer(keys.privateKey),
  grantTtlMs: 60_000,
  audit: { write: async () => undefined, idempotent: false, prune: async () => 0 },
});
// Refusals are the point here: the environment's own failure log would only repeat them.
const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
const env = new MockActivityEnvironment(undefined, { logger: quiet });

function input(overrides: Partial<EvaluatePolicyInput>): EvaluatePolicyInput {
  return {
    jobId: 'job-1',
    scope: {},
    snapshot,
    calls: [preflight({ id: 'c1', name: 'fs_delete', arguments: '{"path":"/srv/a.txt"}' }, ['fs_delete'])],
    memory: { deniedFingerprints: [], redirectedFingerprints: [], approvalRequests: 0, maxApprovalRequests: 5, completionRuleFires: [] },
    ruleCounters: {},
    now: 0,
    ...overrides,
  };
}

async function refusal(run: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

test('an evaluation runs only on the snapshot loadPolicySnapshot sealed for this job', async () => {
  const { seal } = await env.run<[{ jobId: string }], { seal?: string }, typeof activities.loadPolicySnapshot>(activities.loadPolicySnapshot, { jobId: 'job-1' });
  expect(seal).toEqual(expect.any(String));
  const result = await env.run<[EvaluatePolicyInput], EvaluatePolicyResult, typeof activities.evaluatePolicy>(activities.evaluatePolicy, input({ policySeal: seal }));
  expect(result.plan?.outcome).toBe('park');

  const noRules = { ...snapshot, rules: [] };
  for (const forged of [
    input({ snapshot: noRules, policySeal: seal }),
    input({ jobId: 'job-2', policySeal: seal }),
    input({ policySeal: undefined }),
    input({ policySeal: 'AAAA' }),
  ]) {
    const err = await refusal(env.run(activities.evaluatePolicy, forged));
    expect(err.type).toBe(FailureTypes.StateRejected);
    expect(err.nonRetryable).toBe(true);
  }
});
