import { createHash, generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, type ApplicationFailure } from '@temporalio/common';
import { createGrantSigner, loadOrCreateGrantKeyPair } from '../../host/keys/grant-keys';
import { pathDigest } from '../../host/stores/nonces/store';
import type { ExecuteInput } from '../../activities/tool-gate';
import { FailureTypes } from '../../core/temporal/failure-types';
import { callFingerprint } from '../../core/approval/fingerprint';
import { TaskQueues } from '../../core/temporal/task-queues';
import { JobHarness } from '../helpers/job-harness';

let h: JobHarness;
beforeAll(async () => {
  h = await JobHarness.create({
    toolsInProcess: false,
    rules: {
      version: 1,
      rules: [{ id: 'approve-deletes', version: 1, name: 'Deleting needs approval', scope: { categories: ['delete'] }, action: 'request_approval' }],
    },
  });
});
afterAll(async () => h.close());

test('the tools worker process is killed while a job is parked; a new one executes the approved call exactly once', async () => {
  const first = h.spawnToolsWorker();
  await first.waitFor(/workers polling airlock-tools/);
  const file = join(h.root, 'video.mkv');
  writeFileSync(file, 'frames');
  const { jobId } = await h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_delete', arguments: { path: 'video.mkv' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'deleted' } }] },
      ],
    },
  });
  const request = (await h.waitForPending(jobId)).pending[0]!;
  expect(request.observed[0]).toMatchObject({ exists: true, size: 6 });

  first.child.kill('SIGKILL');
  await first.exited();
  const second = h.spawnToolsWorker();
  await second.waitFor(/workers polling airlock-tools/);

  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(file)).toBe(false);
  expect(h.toolResults(jobId).get('call_0_0')).toBe(`deleted ${file}`);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(1);
  // The consumed nonce is the request's, with the outcome stored beside it: whether it worked and a digest, not the output.
  const output = `deleted ${file}`;
  expect(await h.nonces.lookup(request.nonce)).toEqual({
    consumed: false,
    consumedAt: expect.any(String),
    outcome: { ok: true, outputBytes: Buffer.byteLength(output), outputSha256: createHash('sha256').update(output).digest('hex') },
    // The target as it was right before the effect, what a retry would reconcile against; its path only as a digest.
    before: [expect.objectContaining({ path: pathDigest(file), exists: true, size: 6 })],
  });

  second.child.kill('SIGTERM');
  expect(await second.exited()).toBe(0);
});

test('the execute activity refuses calls without a valid grant, and a consumed grant never runs twice', async () => {
  const worker = h.spawnToolsWorker();
  await worker.waitFor(/workers polling airlock-tools/);
  const file = join(h.root, 'notes.txt');
  writeFileSync(file, 'original');
  const jobId = 'forger';
  const scope = {};
  const args = { path: 'notes.txt', content: 'overwritten', mode: 'overwrite' };
  const fingerprint = callFingerprint({ jobId, scope, toolName: 'fs_write', normalizedArgs: args, ruleId: null, ruleVersion: null });
  const claims = { v: 1 as const, jobId, callId: 'c1', fingerprint, nonce: 'a'.repeat(32), expiresAt: Date.now() + 60_000 };
  const base: Omit<ExecuteInput, 'grant'> = { jobId, callId: 'c1', scope, toolName: 'fs_write', args, ruleId: null, ruleVersion: null };
  const realSigner = createGrantSigner(loadOrCreateGrantKeyPair(h.keys.privateFile, h.keys.publicFile).privateKey);
  const otherSigner = createGrantSigner(generateKeyPairSync('ed25519').privateKey);

  const forge = async (input: unknown, id: string): Promise<unknown> =>
    h.env.client.workflow.execute('forgeExecute', { taskQueue: TaskQueues.agent, workflowId: id, args: [input] }) as Promise<unknown>;
  const refusal = async (input: unknown, id: string): Promise<string | undefined> => {
    try {
      await forge(input, id);
      return undefined;
    } catch (err) {
      expect(err).toBeInstanceOf(WorkflowFailedError);
      const activity = (err as WorkflowFailedError).cause;
      expect(activity).toBeInstanceOf(ActivityFailure);
      const failure = (activity as ActivityFailure).cause as ApplicationFailure;
      return failure.type ?? undefined;
    }
  };

  expect(await refusal({ ...base, grant: undefined }, 'forge-none')).toBe(FailureTypes.GrantInvalid);
  expect(await refusal({ ...base, grant: { claims, signature: 'AAAA' } }, 'forge-garbage')).toBe(FailureTypes.GrantInvalid);
  expect(await refusal({ ...base, grant: otherSigner.sign(claims) }, 'forge-other-key')).toBe(FailureTypes.GrantInvalid);
  // A genuine grant does not stretch to other arguments or another call.
  const genuine = realSigner.sign(claims);
  expect(await refusal({ ...base, args: { ...args, content: 'sneaky' }, grant: genuine }, 'forge-other-args')).toBe(FailureTypes.GrantInvalid);
  expect(await refusal({ ...base, callId: 'c2', grant: genuine }, 'forge-other-call')).toBe(FailureTypes.GrantInvalid);
  expect(await refusal({ ...base, grant: realSigner.sign({ ...claims, expiresAt: Date.now() - 1 }) }, 'forge-expired')).toBe(
    FailureTypes.GrantExpired,
  );
  expect(readFileSync(file, 'utf8')).toBe('original');
  expect(await h.nonces.lookup(claims.nonce)).toBeUndefined();

  // The genuine grant runs once; sending it again reports the stored outcome without running.
  expect(await forge({ ...base, grant: genuine }, 'genuine-1')).toMatchObject({ ok: true, replayed: false });
  writeFileSync(file, 'changed by someone else');
  expect(await forge({ ...base, grant: genuine }, 'genuine-2')).toMatchObject({ ok: true, replayed: true });
  expect(readFileSync(file, 'utf8')).toBe('changed by someone else');

  worker.child.kill('SIGTERM');
  await worker.exited();
});
