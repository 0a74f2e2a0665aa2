import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client, Connection, WorkflowFailedError, type WorkflowHandle, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { historyToJSON, type History } from '@temporalio/common/lib/proto-utils';
import { NativeConnection, Runtime } from '@temporalio/worker';
import { OpenAI } from 'openai';
import { createActivities } from '../activities';
import { SqliteStandingApprovals } from '../host/stores/standing-approvals/sqlite';
import { decisionChallenge } from '../core/approval/decision-challenge';
import { SoftPasskey } from '../test/helpers/soft-passkey';
import { createGrantSigner, createGrantVerifier, loadOrCreateGrantKeyPair } from '../host/keys/grant-keys';
import { createSealer } from '../host/keys/seal';
import { SqliteContentStore } from '../host/stores/contents/sqlite';
import { SqliteNonceStore } from '../host/stores/nonces/sqlite';
import { parseRulesDocument } from '../host/config/rules-file';
import { Roots } from '../host/fs/roots';
import { AirlockClient } from '../client/airlock-client';
import { startDevServer } from '../ops/dev/dev-server';
import { freePort } from '../ops/dev/ports';
import { startReplayServer } from '../ops/dev/replay-server';
import { resolveTemporalCli } from '../ops/dev/temporal-cli';
import { ensureSearchAttributes } from '../ops/temporal/search-attributes';
import { parseConfig } from '../core/config/config';
import { AGENT_JOB_WORKFLOW, type AgentJobInput, type AgentJobResult } from '../core/job/job-input';
import type { AgentJobStateView } from '../core/job/job-view';
import { buildSnapshot } from '../core/policy/snapshot';
import { availabilityOf } from '../core/config/tools/tools-config';
import { availableToolNames } from '../core/tools/registry';
import type { MachineTable } from '../core/tools/machines';
import type { ReplayScript } from '../core/model/replay-script';
import { TaskQueues, queueRoles } from '../core/temporal/task-queues';
import { createWorkers } from '../workers/create-workers';
import { runtimeLogger } from '../workers/run-workers';
import { approvalDecisionSignal, clientCallQuery, stateQuery, submitCallUpdate } from '../workflows/messages';
import { requireCurrent } from '../host/temporal/worker-deployments';

/**
 * Records one job of every shape on a real dev server and writes each run's
 * history under test/replay/histories/, named `<shape>.<tag>[.runN].json`.
 * The replay test (`test/integration/replay.test.ts`) replays every file
 * against the current workflow code, so a change that would break a job
 * parked under an older build fails `npm test`.
 *
 *   npm run record:histories [-- --tag TAG] [--only SHAPE,...]
 *
 * TAG defaults to the current commit's short hash. Recording never replaces
 * an older file: new shapes (or a new build's shapes) go next to the old ones.
 */

const HISTORIES = resolve(__dirname, '..', '..', 'test', 'replay', 'histories');

/** One rules file for every shape; each rule singles out its own scenario by tool, path or scope. */
const RULES = {
  version: 1,
  instructions: ['Work only inside the allowed folders.'],
  rules: [
    {
      id: 'deny-private',
      version: 1,
      name: 'Nothing is written under private/',
      scope: { tools: ['fs_write'] },
      when: { arg: 'path', glob: '**/private/**' },
      action: 'deny_current_tool',
      instruction: 'Write somewhere else.',
    },
    {
      id: 'redirect-reports',
      version: 1,
      name: 'Reports go to the outbox',
      scope: { tools: ['fs_write'] },
      when: { arg: 'path', glob: '**/reports/**' },
      action: 'inject_instruction',
      instruction: 'Write reports to outbox/ instead of reports/.',
      limits: { maxFires: 1 },
    },
    {
      id: 'stop-world-writable',
      version: 1,
      name: 'World-writable permissions end the job',
      scope: { tools: ['fs_chmod'] },
      when: { detector: 'world_writable' },
      action: 'stop_task',
    },
    {
      id: 'approve-deletes',
      version: 1,
      name: 'Deleting needs approval',
      scope: { categories: ['delete'] },
      when: { not: { arg: 'path', glob: '**/*.tmp' } },
      action: 'request_approval',
      instruction: 'Check that nothing still needs it.',
      approval: { editable: ['path', 'recursive'] },
    },
    {
      id: 'approve-undo',
      version: 1,
      name: 'Undos need a signed approval',
      scope: { tools: ['fs_undo'] },
      action: 'request_approval',
      approval: { signatureRequired: true },
    },
    {
      id: 'quick-deletes',
      version: 1,
      name: 'Temporary files: short approval window',
      scope: { categories: ['delete'] },
      when: { arg: 'path', glob: '**/*.tmp' },
      action: 'request_approval',
      approval: { ttl: '2s' },
    },
    {
      id: 'standing-appends',
      version: 1,
      name: 'Appending to logs needs approval, which may stand',
      scope: { tools: ['fs_write'] },
      when: { arg: 'path', glob: '**/logs/**' },
      action: 'request_approval',
      approval: { signatureRequired: true, standing: { maxFor: '7d', maxUses: 3, varies: ['content'] } },
    },
    {
      id: 'signed-moves',
      version: 1,
      name: 'Moves need a signed approval',
      scope: { tools: ['fs_move'] },
      action: 'request_approval',
      approval: { signatureRequired: true, reviewers: ['alice'] },
    },
    {
      id: 'judge-notes',
      version: 1,
      name: 'Watch notes for credentials',
      scope: { tools: ['fs_write'] },
      when: { arg: 'path', glob: '**/notes/**' },
      condition: 'writes credentials into a note',
      action: 'request_approval',
    },
    {
      id: 'completion-check',
      version: 1,
      name: 'Completion needs a list of what changed',
      point: 'completion.before_accept',
      scope: { piece: ['completion-gate'] },
      action: 'deny_current_tool',
      instruction: 'List every file you changed in the summary.',
    },
  ],
};

interface Recorder {
  readonly client: Client;
  readonly airlock: AirlockClient;
  readonly root: string;
  readonly signingKey: KeyObject;
  /** Alice's passkey, as the reviewer keys lists it. */
  readonly passkey: SoftPasskey;
  setScript(script: ReplayScript): void;
  setJudgeScript(script: ReplayScript): void;
  /** The machines the next job's snapshot freezes (each has a tools worker on `airlock-tools.<name>`, roots under `<root>/<name>`); undefined: one machine. */
  setMachines(machines: MachineTable | undefined): void;
}

/** The machines the recorder runs tools workers for, each with one root `<root>/<name>`. */
const MACHINES = ['nas', 'media'] as const;

function machineTable(root: string): MachineTable {
  return MACHINES.map((name) => ({ name, roots: [join(root, name)], services: [], commands: [], hosts: [] }));
}

/** A job appending to logs/app.log, parked, approved by alice with a standing approval for a day and three uses. */
async function startGranting(r: Recorder, jobId: string, file: string): Promise<WorkflowHandleWithFirstExecutionRunId> {
  mkdirSync(join(r.root, 'logs'), { recursive: true });
  if (!existsSync(join(r.root, 'logs', file))) writeFileSync(join(r.root, 'logs', file), 'start\n');
  const h = await start(r, jobId, { turns: [{ tool_calls: [call('fs_write', { path: `logs/${file}`, content: 'granted\n', mode: 'append' })] }, complete('appended')] });
  await parked(h);
  const outcome = await r.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice', signingKey: r.signingKey, standing: { forMs: 86_400_000, uses: 3 } });
  if (outcome.accepted !== true || outcome.standing?.kept !== true) throw new Error(`${jobId}: the standing approval was not kept: ${JSON.stringify(outcome)}`);
  return h;
}

async function grantStanding(r: Recorder, jobId: string): Promise<string> {
  return finished(await startGranting(r, jobId, 'granted.log'), 'completed');
}

interface Shape {
  readonly name: string;
  /** Runs the job to its end; returns its first run id. */
  run(r: Recorder, jobId: string): Promise<string>;
}

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });
const complete = (summary: string) => ({ tool_calls: [call('complete', { summary })] });

async function start(r: Recorder, jobId: string, script: ReplayScript, input: Partial<AgentJobInput> = {}): Promise<WorkflowHandleWithFirstExecutionRunId> {
  r.setScript(script);
  return r.client.workflow.start(AGENT_JOB_WORKFLOW, {
    taskQueue: TaskQueues.agent,
    workflowId: jobId,
    args: [{ schemaVersion: 1, goal: `record ${jobId}`, requester: 'recorder', ...input }],
  });
}

async function waitFor(handle: WorkflowHandle, predicate: (s: AgentJobStateView) => boolean, what: string): Promise<AgentJobStateView> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const state = await handle.query(stateQuery);
      if (predicate(state)) return state;
    } catch {
      // Not started yet.
    }
    if (Date.now() > deadline) throw new Error(`${handle.workflowId}: timed out waiting for ${what}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

const parked = (handle: WorkflowHandle) =>
  waitFor(handle, (s) => s.status === 'awaiting_approval' && s.pending.length > 0, 'a pending request');

async function finished(handle: WorkflowHandleWithFirstExecutionRunId, expected: AgentJobResult['status']): Promise<string> {
  const result = (await handle.result()) as AgentJobResult;
  if (result.status !== expected) throw new Error(`${handle.workflowId} ended ${result.status} (${result.reason ?? ''}), expected ${expected}`);
  return handle.firstExecutionRunId;
}

const shapes: Shape[] = [
  {
    name: 'allowed-call',
    async run(r, id) {
      writeFileSync(join(r.root, 'hello.txt'), 'hello');
      const h = await start(r, id, { turns: [{ tool_calls: [call('fs_read', { path: 'hello.txt' })] }, complete('read it')] });
      return finished(h, 'completed');
    },
  },
  {
    name: 'allowed-batch',
    async run(r, id) {
      mkdirSync(join(r.root, 'batch'), { recursive: true });
      writeFileSync(join(r.root, 'batch', 'a.txt'), 'a');
      const h = await start(r, id, {
        turns: [
          {
            tool_calls: [
              call('fs_list', { path: 'batch' }),
              call('fs_stat', { path: 'batch/a.txt' }),
              call('fs_write', { path: 'batch/b.txt', content: 'b' }),
              call('fs_read', { path: 'batch/a.txt' }),
            ],
          },
          complete('batch done'),
        ],
      });
      return finished(h, 'completed');
    },
  },
  {
    name: 'deny',
    async run(r, id) {
      const h = await start(r, id, {
        turns: [
          { tool_calls: [call('fs_write', { path: 'private/x.txt', content: 'x' }), call('fs_list', { path: '.' })] },
          complete('denied'),
        ],
      });
      return finished(h, 'completed');
    },
  },
  {
    name: 'redirect',
    async run(r, id) {
      const h = await start(r, id, {
        turns: [
          { tool_calls: [call('fs_write', { path: 'reports/r.txt', content: 'report' })] },
          { tool_calls: [call('fs_write', { path: 'outbox/r.txt', content: 'report' })] },
          complete('redirected'),
        ],
      });
      return finished(h, 'completed');
    },
  },
  {
    name: 'stop',
    async run(r, id) {
      writeFileSync(join(r.root, 'open.txt'), 'x');
      const h = await start(r, id, { turns: [{ tool_calls: [call('fs_chmod', { path: 'open.txt', mode: '777' })] }, complete('never')] });
      return finished(h, 'aborted');
    },
  },
  {
    name: 'approved',
    async run(r, id) {
      writeFileSync(join(r.root, 'old.bak'), 'old');
      const h = await start(r, id, {
        turns: [{ tool_calls: [call('fs_delete', { path: 'old.bak' }), call('fs_stat', { path: '.' })] }, complete('deleted')],
      });
      await parked(h);
      await decided(r.airlock.decide(id, { decision: 'approve', reviewer: 'alice' }));
      return finished(h, 'completed');
    },
  },
  {
    // A delete in a root kept for undo: the card says reversible, and the approved check carries it to the tools side.
    name: 'reversible-delete',
    async run(r, id) {
      writeFileSync(join(r.root, 'kept.bak'), 'k');
      const h = await start(r, id, { turns: [{ tool_calls: [call('fs_delete', { path: 'kept.bak' })] }, complete('deleted')] });
      const state = await parked(h);
      if (state.pending[0]?.undo?.reversible !== true) throw new Error(`${id}: the delete's card does not say reversible`);
      await decided(r.airlock.decide(id, { decision: 'approve', reviewer: 'alice' }));
      return finished(h, 'completed');
    },
  },
  {
    // The undo of such a delete, as `airlock undo` runs it: a client-driven job that takes one call (fs_undo), parks it,
    // gets a signed approval, restores, and ends completed.
    name: 'undo',
    async run(r, id) {
      writeFileSync(join(r.root, 'undone.bak'), 'u');
      const deleting = `${id}-delete`;
      const d = await start(r, deleting, { turns: [{ tool_calls: [call('fs_delete', { path: 'undone.bak' })] }, complete('deleted')] });
      await parked(d);
      await decided(r.airlock.decide(deleting, { decision: 'approve', reviewer: 'alice' }));
      await finished(d, 'completed');
      const h = await start(r, id, { turns: [] }, { driver: 'client', requester: 'alice', tools: ['fs_undo'], takesCalls: 1 });
      const waiting = await submitter(h)('call-undo-1', 'fs_undo', { job: deleting, call: 'call_0_0', path: join(r.root, 'undone.bak') });
      if (waiting.status !== 'parked') throw new Error(`${id}: the undo was ${waiting.status}, expected parked`);
      await decided(r.airlock.decide(id, { decision: 'approve', reviewer: 'alice', signingKey: r.signingKey }));
      const runId = await finished(h, 'completed');
      if (!existsSync(join(r.root, 'undone.bak'))) throw new Error(`${id}: the undo completed but undone.bak is not back`);
      return runId;
    },
  },
  {
    // A signed approval that also stands for later calls of the same append: the job keeps the standing approval.
    name: 'standing-granted',
    async run(r, id) {
      return grantStanding(r, id);
    },
  },
  {
    // The same append in a later job: a standing approval covers it, one use is taken, nobody is asked, it runs once.
    name: 'standing-used',
    async run(r, id) {
      await finished(await startGranting(r, `${id}-grant`, 'used.log'), 'completed');
      const h = await start(r, id, { turns: [{ tool_calls: [call('fs_write', { path: 'logs/used.log', content: 'used\n', mode: 'append' })] }, complete('appended')] });
      const runId = await finished(h, 'completed');
      if (!readFileSync(join(r.root, 'logs', 'used.log'), 'utf8').endsWith('used\n')) throw new Error(`${id}: the append did not run under the standing approval`);
      return runId;
    },
  },
  {
    // Calls routed to two machines' tools queues; one no machine owns is denied before anything runs.
    name: 'two-machines',
    async run(r, id) {
      writeFileSync(join(r.root, 'nas', 'notes.txt'), 'notes');
      writeFileSync(join(r.root, 'media', 'old.mkv'), 'old');
      r.setMachines(machineTable(r.root));
      try {
        const h = await start(r, id, {
          turns: [
            { tool_calls: [call('fs_read', { path: join(r.root, 'nas', 'notes.txt') }), call('fs_delete', { path: join(r.root, 'media', 'old.mkv') })] },
            { tool_calls: [call('fs_read', { path: join(r.root, 'elsewhere.txt') })] },
            complete('read on the nas, deleted on the media box'),
          ],
        });
        await parked(h);
        await decided(r.airlock.decide(id, { decision: 'approve', reviewer: 'alice' }));
        return await finished(h, 'completed');
      } finally {
        r.setMachines(undefined);
      }
    },
  },
  {
    name: 'approved-with-edit',
    async run(r, id) {
      writeFileSync(join(r.root, 'one.bak'), '1');
      writeFileSync(join(r.root, 'two.bak'), '2');
      const h = await start(r, id, { turns: [{ tool_calls: [call('fs_delete', { path: 'one.bak' })] }, complete('deleted the other')] });
      await parked(h);
      await decided(r.airlock.decide(id, { decision: 'approve', reviewer: 'alice', set: { path: 'two.bak' } }));
      return finished(h, 'completed');
    },
  },
  {
    name: 'denied-by-reviewer',
    async run(r, id) {
      writeFileSync(join(r.root, 'keep.bak'), 'keep');
      const h = await start(r, id, { turns: [{ tool_calls: [call('fs_delete', { path: 'keep.bak' })] }, complete('kept')] });
      await parked(h);
      await decided(r.airlock.decide(id, { decision: 'deny', reviewer: 'alice', reason: 'still needed' }));
      return finished(h, 'completed');
    },
  },
  {
    name: 'expired',
    async run(r, id) {
      writeFileSync(join(r.root, 'scratch.tmp'), 'x');
      const h = await start(r, id, { turns: [{ tool_calls: [call('fs_delete', { path: 'scratch.tmp' })] }, complete('expired')] });
      return finished(h, 'completed');
    },
  },
  {
    name: 'cancelled-while-parked',
    async run(r, id) {
      writeFileSync(join(r.root, 'cancel.bak'), 'c');
      const h = await start(r, id, { turns: [{ tool_calls: [call('fs_delete', { path: 'cancel.bak' })] }, complete('deleted')] });
      await parked(h);
      // The job says it was cancelled, then ends cancelled.
      return cancelled(h, id);
    },
  },
  {
    // Calls from a client instead of the model (the MCP gateway): a read answered at once, a delete that parks, a read while it
    // waits, two retries of the delete while it waits (its key again, and a new key with the same tool and arguments: each
    // attaches to the waiting request), the approval and the run; the job waits for the next call until it is cancelled.
    name: 'client-driven',
    async run(r, id) {
      writeFileSync(join(r.root, 'client.bak'), 'c');
      const h = await start(r, id, { turns: [] }, { driver: 'client', requester: 'mcp-agent' });
      const submit = submitter(h);
      await submit('call-read-1', 'fs_stat', { path: '.' });
      const waiting = await submit('call-delete-1', 'fs_delete', { path: 'client.bak' });
      if (waiting.status !== 'parked') throw new Error(`${id}: the delete was ${waiting.status}, expected parked`);
      await submit('call-read-2', 'fs_list', { path: '.' });
      // Each update has its own id, so both retries are recorded as accepted; neither is a second call.
      for (const key of ['call-delete-1', 'call-delete-1-retry']) {
        const again = await submit(key, 'fs_delete', { path: 'client.bak' });
        if (again.status !== 'parked' || again.requestId !== waiting.requestId) throw new Error(`${id}: the retry ${key} was ${again.status}, expected the waiting request`);
      }
      await decided(r.airlock.decide(id, { decision: 'approve', reviewer: 'alice', requestId: waiting.requestId }));
      for (let i = 0; (await h.query(clientCallQuery, { callKey: 'call-delete-1' }))?.status !== 'answered'; i++) {
        if (i > 300) throw new Error(`${id}: the approved delete was never answered`);
        await new Promise((res) => setTimeout(res, 100));
      }
      return cancelled(h, id);
    },
  },
  {
    // A client's delete waiting for a reviewer, withdrawn by the operator (its agent's token revoked): answered "withdrew this
    // request", not run; then a read runs.
    name: 'client-withdrawn',
    async run(r, id) {
      writeFileSync(join(r.root, 'withdrawn.bak'), 'w');
      const h = await start(r, id, { turns: [] }, { driver: 'client', requester: 'mcp-agent' });
      const submit = submitter(h);
      const waiting = await submit('call-delete-1', 'fs_delete', { path: 'withdrawn.bak' });
      if (waiting.status !== 'parked') throw new Error(`${id}: the delete was ${waiting.status}, expected parked`);
      const outcome = await r.airlock.withdrawRequests(id, { by: 'operator', reason: "withdrawn: agent mcp-agent's token was revoked" });
      if (outcome.kind !== 'withdrawn' || outcome.requestIds.join() !== waiting.requestId) throw new Error(`${id}: the withdrawal was ${JSON.stringify(outcome)}`);
      for (let i = 0; (await h.query(clientCallQuery, { callKey: 'call-delete-1' }))?.status !== 'answered'; i++) {
        if (i > 300) throw new Error(`${id}: the withdrawn delete was never answered`);
        await new Promise((res) => setTimeout(res, 100));
      }
      await submit('call-read-1', 'fs_stat', { path: '.' });
      return cancelled(h, id);
    },
  },
  {
    // A client's delete whose request expires (the two-second rule for *.tmp) while the job takes other calls: a second delete
    // meanwhile is answered at once (one request waits at a time), the first is answered expired, then a read runs.
    name: 'client-expired',
    async run(r, id) {
      writeFileSync(join(r.root, 'quick.tmp'), 'q');
      writeFileSync(join(r.root, 'later.bak'), 'l');
      const h = await start(r, id, { turns: [] }, { driver: 'client', requester: 'mcp-agent' });
      const submit = submitter(h);
      const waiting = await submit('call-quick-1', 'fs_delete', { path: 'quick.tmp' });
      if (waiting.status !== 'parked') throw new Error(`${id}: the delete was ${waiting.status}, expected parked`);
      const second = await submit('call-later-1', 'fs_delete', { path: 'later.bak' });
      if (second.status !== 'answered' || !second.isError) throw new Error(`${id}: the second delete was ${second.status}, expected answered at once (one request at a time); record again if the first expired already`);
      for (let i = 0; (await h.query(clientCallQuery, { callKey: 'call-quick-1' }))?.status !== 'answered'; i++) {
        if (i > 300) throw new Error(`${id}: the expired delete was never answered`);
        await new Promise((res) => setTimeout(res, 100));
      }
      await submit('call-read-1', 'fs_stat', { path: '.' });
      return cancelled(h, id);
    },
  },
  {
    name: 'rejected-forged-decision',
    async run(r, id) {
      writeFileSync(join(r.root, 'target.bak'), 't');
      const h = await start(r, id, { turns: [{ tool_calls: [call('fs_delete', { path: 'target.bak' })] }, complete('deleted')] });
      const state = await parked(h);
      const request = state.pending[0]!;
      // A forged signal (wrong nonce) lands in history and is audited; a forged update is rejected by its validator and reported.
      await r.client.workflow.getHandle(id).signal(approvalDecisionSignal, { ...decisionOf(request), nonce: '0'.repeat(32) });
      const forged = await r.airlock.sendDecision(id, { ...decisionOf(request), fingerprint: 'f'.repeat(64) });
      if (forged.accepted) throw new Error('a forged decision was accepted');
      await waitFor(h, (s) => s.counters.rejectedDecisions >= 2, 'two rejected decisions');
      await decided(r.airlock.decide(id, { decision: 'approve', reviewer: 'alice' }));
      return finished(h, 'completed');
    },
  },
  {
    name: 'completion-gate',
    async run(r, id) {
      const h = await start(
        r,
        id,
        { turns: [{ tool_calls: [call('fs_write', { path: 'done.txt', content: 'd' })] }, complete('wrote a file'), complete('changed done.txt')] },
        { scope: { piece: 'completion-gate' } },
      );
      return finished(h, 'completed');
    },
  },
  {
    name: 'continue-as-new-parked',
    async run(r, id) {
      writeFileSync(join(r.root, 'long.bak'), 'long');
      const h = await start(
        r,
        id,
        { turns: [{ tool_calls: [call('fs_stat', { path: 'long.bak' })] }, { tool_calls: [call('fs_delete', { path: 'long.bak' })] }, complete('deleted after a long wait')] },
        { historyEventLimit: 60 },
      );
      const state = await parked(h);
      const request = state.pending[0]!;
      // While parked, history grows only with what arrives: stray decisions (signals, each audited) push it past the limit.
      // Rejected updates would not do: they leave no event, so a continue-as-new they set off could not be replayed.
      for (let i = 0; i < 40; i++) {
        const now = await h.query(stateQuery);
        if (now.counters.continuedAsNew > 0) break;
        await h.signal(approvalDecisionSignal, { ...decisionOf(request), requestId: `stray-${i}` });
      }
      await waitFor(h, (s) => s.counters.continuedAsNew >= 1 && s.pending.length === 1, 'continue-as-new while parked');
      await decided(r.airlock.decide(id, { decision: 'approve', reviewer: 'alice' }));
      return finished(h, 'completed');
    },
  },
  {
    name: 'judge-shadow',
    async run(r, id) {
      r.setJudgeScript({
        turns: [{ content: JSON.stringify({ version: 1, decisions: [{ rule_id: 'judge-notes', result: 'match', confidence: 0.9 }] }) }],
      });
      const h = await start(r, id, { turns: [{ tool_calls: [call('fs_write', { path: 'notes/n.txt', content: 'password=hunter2' })] }, complete('noted')] });
      return finished(h, 'completed');
    },
  },
  {
    name: 'signed-decision',
    async run(r, id) {
      writeFileSync(join(r.root, 'from.txt'), 'f');
      const h = await start(r, id, { turns: [{ tool_calls: [call('fs_move', { from: 'from.txt', to: 'to.txt' })] }, complete('moved')] });
      await parked(h);
      await decided(r.airlock.decide(id, { decision: 'approve', reviewer: 'alice', signingKey: r.signingKey }));
      return finished(h, 'completed');
    },
  },
  {
    // Reviewers deciding one signed request at the same moment: one decision counts, the others are rejected (replays: see decisionsVerifiedByActivity).
    name: 'concurrent-decisions',
    async run(r, id) {
      writeFileSync(join(r.root, 'from.txt'), 'f');
      const h = await start(r, id, { turns: [{ tool_calls: [call('fs_move', { from: 'from.txt', to: 'to.txt' })] }, complete('moved')] });
      await parked(h);
      const outcomes = await Promise.all([
        ...Array.from({ length: 6 }, (_, i) =>
          r.airlock.decide(id, { decision: i % 3 === 2 ? 'deny' : 'approve', reviewer: 'alice', signingKey: r.signingKey, ...(i % 3 === 2 ? { reason: 'no' } : {}) }),
        ),
        // Unsigned, where the rule wants a signature: rejected.
        r.airlock.decide(id, { decision: 'approve', reviewer: 'alice' }),
      ]);
      if (outcomes.filter((o) => o.accepted).length !== 1) throw new Error(`expected one accepted decision, got ${JSON.stringify(outcomes)}`);
      return finished(h, 'completed');
    },
  },
  {
    name: 'passkey-decision',
    async run(r, id) {
      writeFileSync(join(r.root, 'from.txt'), 'f');
      const h = await start(r, id, { turns: [{ tool_calls: [call('fs_move', { from: 'from.txt', to: 'to.txt' })] }, complete('moved')] });
      const [request] = (await parked(h)).pending;
      if (request === undefined) throw new Error(`${id}: no pending request`);
      const decision = { ...decisionOf(request), reviewer: 'alice', reason: 'signed on the approval page' };
      await decided(r.airlock.sendDecision(id, { ...decision, passkey: r.passkey.assert(decisionChallenge(id, decision)) }));
      return finished(h, 'completed');
    },
  },
];

function decisionOf(request: AgentJobStateView['pending'][number]) {
  return { requestId: request.requestId, fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve' as const, reviewer: 'mallory' };
}

/** Cancels the job and checks it ended cancelled (its result is a cancellation failure); its first run's id. */
async function cancelled(h: WorkflowHandleWithFirstExecutionRunId, id: string): Promise<string> {
  await h.cancel();
  const ended = await h.result().then(
    () => 'completed',
    (err: unknown) => (err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure ? 'cancelled' : String(err)),
  );
  if (ended !== 'cancelled') throw new Error(`${id} ended ${ended}, expected cancelled`);
  return h.firstExecutionRunId;
}

/** A client's calls to a client-driven job, as `submitCall` updates. */
function submitter(h: WorkflowHandle) {
  return (callKey: string, toolName: string, args: Record<string, unknown>) => h.executeUpdate(submitCallUpdate, { args: [{ callKey, toolName, args }] });
}

async function decided(outcome: ReturnType<AirlockClient['decide']>): Promise<void> {
  const o = await outcome;
  if (!o.accepted) throw new Error(`decision rejected: ${o.code} ${o.reason}`);
}

function argValue(flag: string): string | undefined {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** What a shape that failed left behind: the latest run's status and, when it failed, why. */
async function howItEnded(client: Client, jobId: string): Promise<string> {
  try {
    const handle = client.workflow.getHandle(jobId);
    const { status } = await handle.describe();
    const events = (await handle.fetchHistory()).events ?? [];
    const failure = events[events.length - 1]?.workflowExecutionFailedEventAttributes?.failure;
    return `  ${jobId}: ${status.name}${failure ? `: ${failure.message ?? ''} (${failure.applicationFailureInfo?.type ?? 'no type'})` : ''}`;
  } catch (err) {
    return `  ${jobId}: cannot tell (${err instanceof Error ? err.message : String(err)})`;
  }
}

async function main(): Promise<void> {
  const tag = argValue('--tag') ?? execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  if (!/^[A-Za-z0-9._-]+$/.test(tag)) throw new Error(`--tag must be letters, digits, . _ - (got ${JSON.stringify(tag)})`);
  const only = argValue('--only')?.split(',');
  const unknown = (only ?? []).filter((name) => !shapes.some((s) => s.name === name));
  if (unknown.length > 0) throw new Error(`unknown shape(s) ${unknown.join(', ')}; known: ${shapes.map((s) => s.name).join(', ')}`);

  const dir = mkdtempSync(join(tmpdir(), 'airlock-record-'));
  const root = join(dir, 'root');
  mkdirSync(root);
  const cli = await resolveTemporalCli({ log: (line) => process.stderr.write(`${line}\n`) });
  const server = await startDevServer({ cli: cli.path, port: await freePort() });
  const model = await startReplayServer({ script: { turns: [] } });
  const judge = await startReplayServer({ script: { turns: [] } });
  Runtime.install({ logger: runtimeLogger('error'), shutdownSignals: [] });
  const connection = await Connection.connect({ address: server.address });
  await ensureSearchAttributes(connection, 'default');
  const native = await NativeConnection.connect({ address: server.address });
  const grantKeys = loadOrCreateGrantKeyPair(join(dir, 'keys', 'grant.pem'), join(dir, 'keys', 'grant.pub.pem'));
  const reviewer = generateKeyPairSync('ed25519');
  const passkey = new SoftPasskey();
  const nonces = new SqliteNonceStore(join(dir, 'tools', 'nonces.sqlite'));
  let machines: MachineTable | undefined;
  const contents = new SqliteContentStore(join(dir, 'agent', 'contents.sqlite'));
  const standing = new SqliteStandingApprovals(join(dir, 'agent', 'standing-approvals.sqlite'));
  const activities = createActivities({
    agent: {
      openai: new OpenAI({ baseURL: model.baseUrl, apiKey: 'record', maxRetries: 0 }),
      model: 'replay',
      contents,
      contextChars: 400_000,
      loadSnapshot: async () =>
        buildSnapshot(parseRulesDocument(RULES, 'recorded rules'), 'recorded rules', {
          roots: [root],
          judgeModel: 'judge',
          judgeTimeoutMs: 3000,
          // As a worker without a tools config: the snapshot names the tools it offers.
          availableTools: availableToolNames(availabilityOf(undefined)),
          ...(machines !== undefined ? { machines } : {}),
        }),
      signer: createGrantSigner(grantKeys.privateKey),
      sealer: createSealer(grantKeys.privateKey),
      grantTtlMs: 10 * 60_000,
      audit: { write: async () => undefined, idempotent: false, prune: async () => 0 },
      reviewerKeys: {
        get: (name) => (name === 'alice' ? reviewer.publicKey : undefined),
        passkeys: (name) => (name === 'alice' ? [passkey.registered()] : []),
      },
      standing,
    },
    tools: { roots: await Roots.create([root]), nonces, verifier: createGrantVerifier(grantKeys.publicKey), undo: { roots: [realpathSync(root)], keepDays: 7 } },
    judge: { openai: new OpenAI({ baseURL: judge.baseUrl, apiKey: 'record', maxRetries: 0 }), model: 'judge', timeoutMs: 3000 },
  });
  const { workers, buildId } = await createWorkers({
    connection: native,
    namespace: 'default',
    roles: queueRoles,
    activities,
    concurrency: { agent: 10, tools: 4, judge: 2 },
    identity: 'airlock-recorder',
  });
  // One tools worker per machine, each on its own queue and root, as `AIRLOCK_MACHINE` starts them.
  for (const machine of MACHINES) {
    mkdirSync(join(root, machine));
    const machineActivities = createActivities({
      tools: { roots: await Roots.create([join(root, machine)]), nonces, verifier: createGrantVerifier(grantKeys.publicKey), machine },
    });
    workers.push(
      ...(
        await createWorkers({
        connection: native,
        namespace: 'default',
        roles: ['tools'],
        activities: machineActivities,
        concurrency: { agent: 1, tools: 4, judge: 1 },
        identity: `airlock-recorder-${machine}`,
        machine,
      })
      ).workers,
    );
  }
  const running = workers.map((w) => w.run());
  await requireCurrent({ service: native.workflowService, namespace: 'default', buildId });
  const client = new Client({ connection });
  const airlock = await AirlockClient.connect(parseConfig({ TEMPORAL_ADDRESS: server.address }));
  const recorder: Recorder = {
    client,
    airlock,
    root,
    signingKey: reviewer.privateKey,
    passkey,
    setScript: (s) => model.setScript(s),
    setJudgeScript: (s) => judge.setScript(s),
    setMachines: (m) => {
      machines = m;
    },
  };

  mkdirSync(HISTORIES, { recursive: true });
  let failed = false;
  for (const shape of shapes) {
    if (only !== undefined && !only.includes(shape.name)) continue;
    const jobId = `${shape.name}-${tag}`;
    try {
      const firstRunId = await shape.run(recorder, jobId);
      // Follow the chain of runs from the first: each continue-as-new names the next run.
      const histories: History[] = [];
      let runId: string | undefined = firstRunId;
      while (runId !== undefined) {
        const history: History = await client.workflow.getHandle(jobId, runId).fetchHistory();
        histories.push(history);
        const last = history.events?.[history.events.length - 1];
        runId = last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
      }
      for (const [i, history] of histories.entries()) {
        const file = join(HISTORIES, `${shape.name}.${tag}${histories.length > 1 ? `.run${i + 1}` : ''}.json`);
        writeFileSync(file, `${historyToJSON(history)}\n`);
        process.stdout.write(`recorded ${file} (${history.events?.length ?? 0} events)\n`);
      }
    } catch (err) {
      failed = true;
      process.stderr.write(`${shape.name}: ${err instanceof Error ? err.message : String(err)}\n`);
      process.stderr.write(`${await howItEnded(client, jobId)}\n`);
    }
  }

  for (const w of workers) w.shutdown();
  await Promise.all(running);
  await airlock.close();
  await connection.close();
  await native.close();
  await nonces.close();
  await contents.close();
  await standing.close();
  await model.close();
  await judge.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
  if (failed) process.exit(1);
}

main().catch((err: unknown) => {
  process.stderr.write(`record-histories failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
