import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { clientCallQuery, newBuildSignal, submitCallUpdate } from '../../workflows/messages';
import { JobHarness } from '../helpers/job-harness';
import { answered, clientJob as startClientJob } from '../helpers/client-driven';

/**
 * A job driven by a client instead of the model (`driver: 'client'`): each
 * call the client submits goes through the same gate — allowed calls are
 * answered at once, a gated one parks for a reviewer and is answered once
 * decided (run once, or the denial with the reviewer's reason); a resent
 * call gets the same answer, and the same call while one waits attaches to
 * that request instead of asking twice.
 */

let h: JobHarness;
beforeAll(async () => {
  h = await JobHarness.create({
    rules: {
      version: 1,
      rules: [{ id: 'approve-deletes', version: 1, name: 'deletes need a person', scope: { categories: ['delete'] }, action: 'request_approval' }],
    },
  });
});
afterAll(async () => h.close());

const clientJob = (name: string, input: { historyEventLimit?: number } = {}) => startClientJob(h, { name: `client-${name}`, requester: 'claude', input });

describe('a client-driven job', () => {
  test('an allowed read is answered at once; a delete parks, is approved from the CLI, runs once; the same key again gives the same answer', async () => {
    writeFileSync(join(h.root, 'old.log'), 'old\n');
    const job = await clientJob('approve');
    const listed = await job.submit('fs_list', { path: '.' });
    expect(listed).toMatchObject({ status: 'answered', toolName: 'fs_list', isError: false });
    expect(listed.status === 'answered' ? listed.text : '').toContain('old.log');

    const key = randomUUID();
    const parked = await job.submit('fs_delete', { path: 'old.log' }, key);
    expect(parked).toMatchObject({ callKey: key, status: 'parked', toolName: 'fs_delete', ruleId: 'approve-deletes' });
    const requestId = parked.status === 'parked' ? parked.requestId : '';
    // The requester is the agent: cards and audit name it.
    expect((await h.state(job.jobId)).pending).toEqual([expect.objectContaining({ requestId, requester: 'claude' })]);

    expect(await h.cli(['approve', job.jobId, '--request', requestId, '--reviewer', 'alice'])).toMatchObject({ code: 0 });
    const done = await answered(job.query, key);
    expect(done).toMatchObject({ status: 'answered', isError: false, requestId });
    expect(existsSync(join(h.root, 'old.log'))).toBe(false);
    const deletes = () => h.audit(job.jobId, 'tool_executed').filter((e) => e.data.toolName === 'fs_delete');
    for (let i = 0; i < 100 && deletes().length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(deletes()).toEqual([expect.objectContaining({ data: expect.objectContaining({ requestId, ok: true }) })]);
    // Sent again (a client that lost the answer): the same answer, nothing run twice.
    expect(await job.submit('fs_delete', { path: 'old.log' }, key)).toEqual(done);
    await new Promise((r) => setTimeout(r, 500));
    expect(deletes()).toHaveLength(1);
  });

  test('a denial reaches the client as an error answer with the reviewer’s reason; a retry while it waits attaches to the same request', async () => {
    writeFileSync(join(h.root, 'keep.db'), 'precious\n');
    const job = await clientJob('deny');
    const first = await job.submit('fs_delete', { path: 'keep.db' });
    // A client that lost the connection sends the same call under a new key: the request that waits, not a second one.
    const retried = await job.submit('fs_delete', { path: 'keep.db' });
    expect(retried).toEqual(first);
    expect((await h.state(job.jobId)).pending).toHaveLength(1);
    const requestId = first.status === 'parked' ? first.requestId : '';
    expect(await h.cli(['deny', job.jobId, '--request', requestId, '--reviewer', 'alice', '--reason', 'that is the live database'])).toMatchObject({ code: 0 });
    const done = await answered(job.query, first.callKey);
    expect(done.isError).toBe(true);
    expect(done.text).toContain('that is the live database');
    expect(existsSync(join(h.root, 'keep.db'))).toBe(true);
  });

  test('across continue-as-new: answers already given stay, and a call parked in one run is answered in the next', async () => {
    writeFileSync(join(h.root, 'stale.tmp'), 'x\n');
    const job = await clientJob('moving', { historyEventLimit: 40 });
    const reads = [];
    for (let i = 0; i < 6; i++) reads.push(await job.submit('fs_stat', { path: '.' }));
    const parked = await job.submit('fs_delete', { path: 'stale.tmp' });
    expect(parked.status).toBe('parked');
    const parkedIn = (await h.airlock.client.workflow.getHandle(job.jobId).describe()).runId;
    // Each wake-up adds to the waiting run's history until it passes the limit and the job moves to a new run, still waiting.
    let moved = parkedIn;
    for (let i = 0; i < 40 && moved === parkedIn; i++) {
      await h.airlock.client.workflow.getHandle(job.jobId).signal(newBuildSignal);
      await new Promise((r) => setTimeout(r, 300));
      moved = (await h.airlock.client.workflow.getHandle(job.jobId).describe()).runId;
    }
    expect(moved).not.toBe(parkedIn);
    const latest = h.airlock.client.workflow.getHandle(job.jobId);
    expect(await latest.query(clientCallQuery, { callKey: reads[0]?.callKey ?? '' })).toEqual(reads[0]);
    const requestId = parked.status === 'parked' ? parked.requestId : '';
    expect(await h.cli(['approve', job.jobId, '--request', requestId, '--reviewer', 'alice'])).toMatchObject({ code: 0 });
    const done = await answered((key) => latest.query(clientCallQuery, { callKey: key }), parked.callKey);
    expect(done).toMatchObject({ toolName: 'fs_delete', isError: false, requestId });
    expect(existsSync(join(h.root, 'stale.tmp'))).toBe(false);
    // A call sent to the new run is taken there.
    expect(await latest.executeUpdate(submitCallUpdate, { args: [{ callKey: randomUUID(), toolName: 'fs_list', args: { path: '.' } }] })).toMatchObject({ status: 'answered', isError: false });
  });

  test('an unknown tool, a malformed call and a call to a model-driven job are refused before they reach the gate', async () => {
    const job = await clientJob('refused');
    const refused = async (p: Promise<unknown>) => {
      const err = await p.then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      return err instanceof WorkflowUpdateFailedError && err.cause instanceof Error ? err.cause.message : '';
    };
    expect(await refused(job.submit('rm_rf', { path: '/' }))).toMatch(/unknown tool "rm_rf"/);
    expect(await refused(job.submit('fs_delete', { path: 42 }))).toMatch(/path/);
    expect(await refused(job.submit('complete', { summary: 'done' }))).toMatch(/complete/);
    expect(await refused(job.handle.executeUpdate(submitCallUpdate, { args: [{ callKey: 'x', toolName: 'fs_list', args: {} }] }))).toMatch(/callKey/);
    // Refused in the validator: no history, no audit of a call.
    expect(h.audit(job.jobId).filter((e) => e.type === 'tool_executed' || e.type === 'approval_requested')).toEqual([]);

    const { handle } = await h.start({ jobId: `model-${Date.now()}`, script: { turns: [{ tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] } });
    const modelJob = handle.executeUpdate(submitCallUpdate, { args: [{ callKey: randomUUID(), toolName: 'fs_list', args: { path: '.' } }] });
    // A model-driven job has no such handler at all.
    expect(await refused(modelJob)).toMatch(/No registered handler for update: submitCall|already completed/);
  });
});
