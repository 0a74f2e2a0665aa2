import { CancellationScope, isCancellation } from '@temporalio/workflow';
import { KEPT_STATED_REASON_CHARS } from '../core/job/batch-view';
import type { AgentJobInput, AgentJobResult } from '../core/job/job-input';
import { preflight, type PreflightedCall } from '../core/job/preflight';
import { withUniqueCallIds } from '../core/model/chat';
import { describeError } from '../core/temporal/describe-error';
import { COMPLETE_TOOL } from '../core/tools/registry';
import { model } from './activities';
import { resumeParkedBatch, waitForDecisions } from './approvals';
import { registerHandlers } from './decisions';
import { evaluateBatch } from './policy-check';
import { registerClientHandlers, runClientJob } from './client-driver';
import { Job } from './job';
import type { JobState } from './job-state';
import { continueAsNew } from './continue-as-new';
import { runPlan } from './run-plan';
import { turnDecision, turnPolicy, type TurnDecision } from './turn-decision';
import { registerWithdrawals, type ClientCalls } from './withdrawals';

/**
 * The job: model turns, a policy check before every side effect, durable
 * approvals, and each approved call run once.
 */
export async function agentJob(input: AgentJobInput): Promise<AgentJobResult> {
  const job = new Job(input);
  registerHandlers(job);
  // Calls from a client instead of the model (the MCP gateway): the same gate from the batch on.
  const client: ClientCalls = { inbox: [], inFlight: new Set(), preflighted: new WeakMap() };
  if (job.input.driver === 'client') registerClientHandlers(job, client);
  const withdrawals = registerWithdrawals(job, job.input.driver === 'client' ? client : undefined);
  try {
    if (job.input.driver === 'client') return await runClientJob(job, await job.start(), client, withdrawals);
    return await runJob(job);
  } catch (err) {
    // Cancelled: say so before ending, in a scope the cancellation does not reach.
    if (isCancellation(err)) await CancellationScope.nonCancellable(() => job.cancelled());
    throw err;
  }
}

async function runJob(job: Job): Promise<AgentJobResult> {
  const state = await job.start();
  for (;;) {
    if (state.parked !== null) {
      const waited = await waitForDecisions(job, state);
      if (waited !== 'decided') return continueAsNew(job, state, { upgrade: waited === 'upgrade' });
      const ended = await resumeParkedBatch(job, state);
      if (ended !== undefined) return ended;
      continue;
    }
    if (job.shouldContinueAsNew()) return continueAsNew(job, state);
    if (state.turns >= job.input.maxTurns) {
      return job.finish(state, 'failed', { reason: 'max_turns', detail: `no completion within ${job.input.maxTurns} turns` });
    }
    const turn = await modelTurn(job, state);
    if (turn.kind === 'failed') return job.finish(state, 'failed', { reason: 'model_error', detail: turn.detail });
    if (turn.calls.length === 0) continue;

    const evaluated = await evaluateBatch(job, state, turn.calls, undefined, turn.decided);
    state.recordPlan(evaluated.plan, Date.now());
    const ended = await runPlan(job, state, evaluated);
    if (ended !== undefined) return ended;
  }
}

/**
 * One model turn: the assistant message joins the conversation; its calls
 * are checked before policy sees them. The turn also carries the job's
 * audit events and brings the gate's first decision on its calls.
 */
async function modelTurn(job: Job, state: JobState): Promise<{ kind: 'calls'; calls: PreflightedCall[]; decided?: TurnDecision } | { kind: 'failed'; detail: string }> {
  state.startTurn();
  job.show();
  const gate = turnPolicy(job, state);
  const audit = job.audit.carry();
  let turn;
  try {
    turn = await model.modelTurn({
      ...state.modelInput(),
      toolNames: [...job.allowedTools, COMPLETE_TOOL],
      ...(gate !== undefined ? { gate } : {}),
      ...(audit !== undefined ? { audit } : {}),
    });
    job.audit.settle(audit, turn.audit);
  } catch (err) {
    // A turn that failed wrote nothing it carried: the events stay with the job.
    job.audit.settle(audit, { written: 0, error: `the model turn failed: ${describeError(err)}` });
    if (isCancellation(err)) throw err;
    job.audit.record({ type: 'runtime_error', data: { code: 'model_error', error: describeError(err), turn: state.turns } });
    return { kind: 'failed', detail: describeError(err) };
  }
  // Answers recorded by builds that stored nothing had their ids made unique here; it changes nothing since.
  const assistant = { ...turn.message, toolCalls: withUniqueCallIds(turn.message.toolCalls) };
  // Kept in memory only (a replay sets it again): a batch that parks carries it for reviewers.
  job.statedReason = assistant.content?.slice(0, KEPT_STATED_REASON_CHARS) ?? undefined;
  // Turns recorded before the content store returned no head.
  state.addAssistant(assistant, typeof turn.head === 'string' ? turn.head : undefined);
  if (assistant.toolCalls.length === 0) state.nudge();
  const calls = assistant.toolCalls.map((c) => preflight(c, job.allowedTools, state.snapshot.detectors.roots));
  const decided = turnDecision(job, state, gate, turn.gate, calls);
  return decided === undefined ? { kind: 'calls', calls } : { kind: 'calls', calls, decided };
}
