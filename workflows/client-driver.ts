import { issuesText } from '../core/util/errors';
import { ApplicationFailure, condition, currentUpdateInfo, setHandler } from '@temporalio/workflow';
import { clientCallView, submitCallInputSchema, type ClientCallView, type SubmitCallInput } from '../core/job/client-calls';
import type { AgentJobResult } from '../core/job/job-input';
import { preflight, type PreflightedCall } from '../core/job/preflight';
import { Texts } from '../core/job/texts';
import { FailureTypes } from '../core/temporal/failure-types';
import { UPSTREAM_TOOL_NAME } from '../core/tools/upstream/upstream-spec';
import { COMPLETE_TOOL } from '../core/tools/registry';
import { canonicalJson } from '../core/util/canonical-json';
import { sha256Hex } from '../core/util/sha256';
import { resumeParkedBatch, waitForDecisions } from './approvals';
import { evaluateBatch } from './policy-check';
import type { Job } from './job';
import type { JobState } from './job-state';
import { clientCallQuery, clientCallsQuery, submitCallUpdate } from './messages';
import { continueAsNew } from './continue-as-new';
import { runPlan } from './run-plan';
import type { ClientCalls, Preflighted, Withdrawals } from './withdrawals';

/**
 * A job driven by a client instead of the model (`driver: 'client'`): calls
 * arrive by `submitCall`, one batch per arrival, and take the model's path
 * from there — the same policy, park, approval, revalidation, grant, nonce
 * and reconciliation. What became of each call is kept in the job's state,
 * so the client's `clientCall` query (and a resent `submitCall`) answers
 * after any restart.
 */

const argsDigest = (args: unknown) => sha256Hex(canonicalJson(args));

/** Calls `clientCalls` lists. */
const LISTED_CALLS = 50;

export function registerClientHandlers(job: Job, client: ClientCalls): void {
  const inbox = client.inbox;
  // The validator's preflight by update id, for its handler: a call is preflighted once (a replay, which runs no validator, preflights in the loop).
  const checkedBy = new Map<string, Preflighted>();
  // Keys accepted and not yet answered: a second update with the same key (another update id) waits for the first's answer, never runs the call again.
  const accepted = new Set<string>();
  setHandler(clientCallQuery, ({ callKey }) => {
    const call = job.state?.clientCall(callKey);
    return call === undefined ? null : clientCallView(call);
  });
  setHandler(clientCallsQuery, () => {
    const calls = job.state?.clientCalls() ?? [];
    const waiting = calls.filter((c) => c.status === 'parked');
    const answered = calls.filter((c) => c.status === 'answered').slice(-Math.max(0, LISTED_CALLS - waiting.length));
    return [...waiting, ...answered.reverse()].slice(0, LISTED_CALLS).map(clientCallView);
  });
  setHandler(
    submitCallUpdate,
    async (raw): Promise<ClientCallView> => {
      const input = submitCallInputSchema.parse(raw);
      const updateId = currentUpdateInfo()?.id ?? '';
      const checked = checkedBy.get(updateId);
      checkedBy.delete(updateId);
      await condition(() => job.state !== undefined || job.closing);
      const state = job.state;
      if (state === undefined) throw retryLater();
      const known = state.clientCall(input.callKey);
      if (known !== undefined) return clientCallView(known);
      // The same call while one waits for a reviewer (a client retrying after a disconnect): that request, not a second one.
      const digest = argsDigest(input.args);
      const waiting = state.clientCalls().find((c) => c.status === 'parked' && c.toolName === input.toolName && c.argsDigest === digest);
      if (waiting !== undefined) return clientCallView(waiting);
      const first = !accepted.has(input.callKey);
      if (first) {
        accepted.add(input.callKey);
        inbox.push(input);
        if (checked !== undefined) client.preflighted.set(input, checked);
      }
      try {
        await condition(() => state.clientCall(input.callKey) !== undefined || job.closing);
      } finally {
        if (first) accepted.delete(input.callKey);
      }
      const answered = state.clientCall(input.callKey);
      if (answered === undefined) throw retryLater();
      return clientCallView(answered);
    },
    {
      description: 'A call from the client that drives this job (the MCP gateway): the same gate as a model call. Prefer `airlock mcp`.',
      validator: (raw) => {
        if (job.input.driver !== 'client') throw invalid('this job is driven by its model; it takes no calls from a client');
        const parsed = submitCallInputSchema.safeParse(raw);
        if (!parsed.success) throw invalid(`invalid call: ${issuesText(parsed.error.issues)}`);
        // An upstream MCP server's tool is known only from the job's snapshot: a first call that starts the job is checked once it is loaded.
        if (job.state === undefined && UPSTREAM_TOOL_NAME.test(parsed.data.toolName)) return;
        // Refused here, before history: an unknown, not allowed or malformed call never reaches the gate or a tool.
        const roots = job.state?.snapshot.detectors.roots;
        const checked = preflightOf(job, parsed.data, roots);
        if (checked.kind !== 'tool' || parsed.data.toolName === COMPLETE_TOOL) throw invalid(checked.kind === 'error' ? checked.message : `${parsed.data.toolName} is not a tool a client may call`);
        const updateId = currentUpdateInfo()?.id;
        if (updateId !== undefined) checkedBy.set(updateId, { roots, call: checked });
      },
    },
  );
}

function invalid(message: string): ApplicationFailure {
  return ApplicationFailure.create({ message, type: FailureTypes.InvalidInput, nonRetryable: true });
}

/** The job is continuing as new (or ending) before it took the call: the same call sent again reaches the next run. */
function retryLater(): ApplicationFailure {
  return ApplicationFailure.create({ message: 'the job is moving to a new run before it took this call; send it again with the same callKey', type: FailureTypes.CallNotTaken, nonRetryable: true });
}

/** The batch's answers (and any instructions the gate gave besides) become its calls' answers; its parked calls say which request decides them. */
function settle(state: JobState, keys: ReadonlyMap<string, SubmitCallInput>, now: number): void {
  const { answers, notes } = state.takeAnswers();
  const said = notes.length > 0 ? `\n${notes.join('\n')}` : '';
  for (const a of answers) {
    const input = keys.get(a.callId);
    const request = state.knownRequests().find((r) => r.callId === a.callId);
    state.setClientCall({
      status: 'answered',
      callKey: a.callId,
      toolName: input?.toolName ?? state.clientCall(a.callId)?.toolName ?? '',
      text: `${a.text}${said}`,
      isError: a.failed,
      ...(request !== undefined ? { requestId: request.requestId } : {}),
      at: now,
    });
  }
  for (const r of state.pendingRequests()) {
    const input = keys.get(r.callId);
    if (input === undefined || state.clientCall(r.callId) !== undefined) continue;
    state.setClientCall({ status: 'parked', callKey: r.callId, toolName: r.toolName, argsDigest: argsDigest(input.args), requestId: r.requestId, ruleId: r.ruleId, at: now });
  }
  // Nothing waits and a call has no answer: say so rather than leave its client waiting.
  if (state.parked !== null) return;
  for (const [key, input] of keys) {
    if (state.clientCall(key) === undefined) state.setClientCall({ status: 'answered', callKey: key, toolName: input.toolName, text: 'Error: the job gave this call no answer.', isError: true, at: now });
  }
}

export async function runClientJob(job: Job, state: JobState, client: ClientCalls, withdrawals: Withdrawals): Promise<AgentJobResult> {
  const inbox = client.inbox;
  // The system prompt and goal a model would have read: nobody reads them here.
  state.takeAnswers();
  // The calls of the batch in hand, by key (a batch parked by an earlier run is known by its parked calls).
  let batch = new Map<string, SubmitCallInput>();
  // Whatever ends the run (a stop rule, continue-as-new) answers the batch's calls first, before it waits for the handlers.
  job.onEnding(() => settle(state, batch, Date.now()));
  for (;;) {
    const answers = callsTaken(job, state);
    if (answers !== undefined) return job.finish(state, 'completed', { summary: answers });
    if (state.parked !== null) {
      const waited = await waitForDecisions(job, state, () => inbox.length > 0);
      if (waited === 'woken') {
        // A call while another waits for a person: it runs if it may, without waiting for that decision.
        const ended = await takeWhileParked(job, state, client);
        if (ended !== undefined) return ended;
        continue;
      }
      if (waited !== 'decided') return continueAsNew(job, state, { upgrade: waited === 'upgrade' });
      const ended = await resumeParkedBatch(job, state);
      settle(state, batch, Date.now());
      if (ended !== undefined) return ended;
      continue;
    }
    if (inbox.length === 0) {
      if (job.shouldContinueAsNew()) return continueAsNew(job, state);
      job.show();
      // Nothing else writes the audit while the job waits for its next call.
      await job.audit.flush();
      await condition(() => inbox.length > 0 || job.shouldContinueAsNew());
      continue;
    }
    // One call per batch: a call that parks holds back only itself (the calls after it wait their turn in the inbox).
    const taken = takeOne(job, state, client);
    batch = taken.batch;
    client.inFlight = new Set(batch.keys());
    const evaluated = await evaluateBatch(job, state, taken.calls);
    state.recordPlan(evaluated.plan, Date.now());
    const ended = await runPlan(job, state, evaluated);
    // A request the call just parked whose agent was withdrawn meanwhile: withdrawn too, never left for a reviewer.
    withdrawals.settleLate(state);
    settle(state, batch, Date.now());
    client.inFlight = new Set();
    if (ended !== undefined) return ended;
  }
}

/**
 * A job that takes a set number of calls (`takesCalls`, `airlock undo`'s
 * job takes one) is done once that many are answered and none waits: the
 * answers, as its summary. Undefined while it takes more.
 */
function callsTaken(job: Job, state: JobState): string | undefined {
  const limit = job.input.takesCalls;
  if (limit === undefined || state.parked !== null) return undefined;
  const answered = state.clientCalls().filter((c) => c.status === 'answered');
  if (answered.length < limit) return undefined;
  return answered.map((c) => (c.status === 'answered' ? c.text : '')).join('\n');
}

/** A client's call as the model's would arrive: the same preflight (once, in the validator; in the loop on replay or when the roots changed). */
function preflightOf(job: Job, call: SubmitCallInput, roots: readonly string[] | undefined): PreflightedCall {
  return preflight({ id: call.callKey, name: call.toolName, arguments: JSON.stringify(call.args) }, job.allowedTools, roots);
}

/**
 * The next call of the inbox as a batch of one, by key, and preflighted:
 * the validator's result when it saw the same roots (preflight is pure, so
 * the result is the one computed here either way), else computed now.
 */
function takeOne(job: Job, state: JobState, client: ClientCalls): { readonly batch: Map<string, SubmitCallInput>; readonly calls: PreflightedCall[] } {
  const submitted = client.inbox.splice(0, 1);
  const roots = state.snapshot.detectors.roots;
  const calls = submitted.map((c) => {
    const checked = client.preflighted.get(c);
    client.preflighted.delete(c);
    return checked !== undefined && checked.roots === roots ? checked.call : preflightOf(job, c, roots);
  });
  return { batch: new Map(submitted.map((c) => [c.callKey, c])), calls };
}

/**
 * One call taken while a batch is parked: allowed, redirected or stopped as
 * usual; one that needs a person too is answered at once (one request of an
 * agent waits at a time), so it never holds the agent's other calls.
 */
async function takeWhileParked(job: Job, state: JobState, client: ClientCalls): Promise<AgentJobResult | undefined> {
  const { batch, calls } = takeOne(job, state, client);
  const { plan } = await evaluateBatch(job, state, calls);
  if (plan.outcome === 'park') {
    const waiting = state.pendingRequests().map((r) => r.requestId).join(', ');
    for (const p of plan.calls) state.addToolResult(p.call.callId, Texts.oneRequestAtATime(waiting), true);
    settle(state, batch, Date.now());
    return undefined;
  }
  state.recordPlan(plan, Date.now());
  const ended = await runPlan(job, state, { plan });
  settle(state, batch, Date.now());
  return ended;
}
