import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { FailureTypes } from '../../core/temporal/failure-types';
import { AGENT_JOB_WORKFLOW, type AgentJobInput } from '../../core/job/job-input';
import { TaskQueues } from '../../core/temporal/task-queues';
import { JobHarness } from '../helpers/job-harness';

let h: JobHarness;

beforeAll(async () => {
  h = await JobHarness.create({
    rules: {
      version: 1,
      rules: [{ id: 'approve-deletes', version: 1, name: 'Deleting needs approval', scope: { categories: ['delete'] }, action: 'request_approval' }],
    },
  });
});
afterAll(async () => h.close());
afterEach(async () => h.terminateRunning());

const deleteScript = (file: string) => ({
  turns: [
    { tool_calls: [{ name: 'fs_stat', arguments: { path: file } }] },
    { tool_calls: [{ name: 'fs_delete', arguments: { path: file } }] },
    { tool_calls: [{ name: 'complete', arguments: { summary: 'deleted' } }] },
  ],
});

/** Runs a real job until it continues as new while parked on the delete; returns the input its second run got. */
async function realContinuedInput(file: string): Promise<{ jobId: string; input: AgentJobInput & { carried: Record<string, unknown> } }> {
  writeFileSync(join(h.root, file), 'keep');
  const { jobId, handle } = await h.start({ script: deleteScript(file), input: { historyEventLimit: 40 } });
  const parked = await h.waitForPending(jobId);
  const request = parked.pending[0]!;
  for (let i = 0; i < 40 && (await h.state(jobId)).counters.continuedAsNew === 0; i++) {
    await h.airlock.sendDecision(jobId, { requestId: `stray-${i}`, fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve', reviewer: 'x' });
  }
  await h.waitFor(jobId, (s) => s.counters.continuedAsNew >= 1, 'continue-as-new');
  const history = await h.env.client.workflow.getHandle(jobId).fetchHistory();
  const started = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  if (started?.data == null) throw new Error('no start input');
  const input = JSON.parse(Buffer.from(started.data).toString('utf8')) as AgentJobInput & { carried: Record<string, unknown> };
  await handle.terminate('taken as a sample');
  return { jobId, input };
}

/** Starts the attacker's workflow under `jobId`; it continues as new into agentJob with `next`. */
async function rogue(jobId: string, next: unknown): Promise<unknown> {
  const handle = await h.env.client.workflow.start('rogueContinueAsNew', { taskQueue: TaskQueues.agent, workflowId: jobId, args: [next] });
  return handle.result().then(
    () => 'completed',
    (err: unknown) => err,
  );
}

/**
 * What the job's latest run (the agentJob run that was refused) scheduled:
 * refused runs never reach the model or the tools (no model turn, no
 * prepareApproval, no revalidate, no execute).
 */
async function scheduled(jobId: string): Promise<string[]> {
  const events = (await h.env.client.workflow.getHandle(jobId).fetchHistory()).events ?? [];
  // The refused run itself, not the rogue run before it nor the real one it was sealed for.
  expect(events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name).toBe(AGENT_JOB_WORKFLOW);
  expect(events[events.length - 1]?.workflowExecutionFailedEventAttributes?.failure?.applicationFailureInfo?.type).toBe(FailureTypes.StateRejected);
  return events.flatMap((e) => {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    return name == null ? [] : [name];
  });
}

function refusedWith(err: unknown, text: RegExp): void {
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  expect((cause as ApplicationFailure).type).toBe(FailureTypes.StateRejected);
  expect((cause as ApplicationFailure).message).toMatch(text);
}

test('a client that starts agentJob with state of its own (no rules) is refused before anything runs', async () => {
  const { input } = await realContinuedInput('client-forged.txt');
  writeFileSync(join(h.root, 'victim.txt'), 'victim');
  const forged = { ...input.carried, snapshot: { ...(input.carried.snapshot as object), rules: [] }, parked: null };
  const jobId = `forged-${Date.now()}`;
  const handle = await h.env.client.workflow.start(AGENT_JOB_WORKFLOW, {
    taskQueue: TaskQueues.agent,
    workflowId: jobId,
    args: [{ ...input, carried: forged, carriedSeal: undefined }],
  });
  refusedWith(await handle.result().catch((err: unknown) => err), /only from its own continue-as-new/);
  expect(existsSync(join(h.root, 'victim.txt'))).toBe(true);
  expect(h.requestsOf(jobId)).toHaveLength(0);
  expect(await scheduled(jobId)).toEqual([]);
});

test("a rogue workflow that continues as new into agentJob is refused: no seal, another job's seal, a tampered state or input", async () => {
  const { jobId, input } = await realContinuedInput('sealed.txt');
  const sealed = input.carriedSeal;
  expect(sealed).toEqual(expect.any(String));
  const noRules = { ...input.carried, snapshot: { ...(input.carried.snapshot as object), rules: [] } };

  const unsealedId = `rogue-unsealed-${Date.now()}`;
  refusedWith(await rogue(unsealedId, { ...input, carriedSeal: undefined }), /carries no seal/);
  expect(h.audit(unsealedId, 'runtime_error').map((e) => e.data.code)).toEqual([FailureTypes.StateRejected]);
  expect(await scheduled(unsealedId)).toEqual([]);
  const otherId = `rogue-other-${Date.now()}`;
  refusedWith(await rogue(otherId, input), /seal does not match/);
  expect(await scheduled(otherId)).toEqual([]);
  // The job's own id and seal, over state or input changed since: refused before the parked delete, or anything, runs.
  const modelRequests = h.requestsOf(jobId).length;
  const executed = h.audit(jobId, 'tool_executed').length;
  const tampered = await rogue(jobId, { ...input, carried: noRules });
  refusedWith(tampered, /seal does not match/);
  expect(await scheduled(jobId)).toEqual([]);
  expect(readFileSync(join(h.root, 'sealed.txt'), 'utf8')).toBe('keep');
  const widened = await rogue(jobId, { ...input, maxApprovalRequests: 1000, requester: 'mallory' });
  refusedWith(widened, /seal does not match/);
  expect(await scheduled(jobId)).toEqual([]);
  expect(readFileSync(join(h.root, 'sealed.txt'), 'utf8')).toBe('keep');
  expect(h.requestsOf(jobId)).toHaveLength(modelRequests);
  expect(h.audit(jobId, 'runtime_error').filter((e) => e.data.code === FailureTypes.StateRejected)).toHaveLength(2);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(executed);

  // The state it carried, unchanged and under its own job id, is accepted: the job resumes parked on the same request.
  const genuine = await h.env.client.workflow.start('rogueContinueAsNew', { taskQueue: TaskQueues.agent, workflowId: jobId, args: [input] });
  const resumed = await h.waitForPending(jobId);
  expect(resumed.pending[0]?.toolName).toBe('fs_delete');
  expect(existsSync(join(h.root, 'sealed.txt'))).toBe(true);
  await genuine.terminate('done');
  expect(h.audit(jobId, 'tool_executed').filter((e) => e.data.toolName === 'fs_delete')).toHaveLength(0);
});
