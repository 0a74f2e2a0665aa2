import { WorkflowUpdateStage } from '@temporalio/client';
import { existsSync, watch, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { stateQuery } from '../../workflows/messages';
import type { BenchOptions } from './args';
import type { Figure } from './figures';
import { approval, call, completeTurn, completed, startJob, waitParked } from './jobs';
import { PLAIN_PARKED_WORKFLOW, plainDecideUpdate } from './plain-workflow';
import { PLAIN_TASK_QUEUE } from './plain-worker';
import type { Stack } from './stack';
import { interleaved, pairedRatios, sleep, sampled, timed } from './stats';

/**
 * Approval latency: from sending the `decide` update to the approved file
 * being gone (the job revalidates, gets a grant, and the tools worker
 * deletes it), one parked job at a time, each beside a plain workflow parked
 * on an update that deletes its file with the same tool code in one
 * activity (Temporal's own floor under it). Then what a reviewer waits for to
 * see a parked write: the state query of a job parked on a small write and
 * of one parked on a megabyte (the most a write takes; the query handler
 * masks the whole argument), interleaved round by round.
 */

/** Watches for the moment `file` stops existing: inotify, with a short poll in case an event is missed. */
export function whenGone(dir: string, name: string): { goneWithin(what: string): Promise<number>; close(): void } {
  const file = join(dir, name);
  let resolve: (at: number) => void = () => undefined;
  const gone = new Promise<number>((r) => {
    resolve = r;
  });
  const check = () => {
    if (!existsSync(file)) resolve(performance.now());
  };
  const watcher = watch(dir, (_event, changed) => {
    if (changed === name) check();
  });
  const poll = setInterval(check, 5);
  return {
    /** The moment it went, or an error saying `what` was not deleted within 60 s. */
    async goneWithin(what: string): Promise<number> {
      const at = await Promise.race([gone, sleep(60_000).then(() => Number.NaN)]);
      if (Number.isNaN(at)) throw new Error(`${what} was not deleted within 60 s`);
      return at;
    },
    close() {
      watcher.close();
      clearInterval(poll);
    },
  };
}

export async function approvalPart(stack: Stack, options: BenchOptions): Promise<Figure[]> {
  stack.useRules('approvals');
  const toUnlink: number[] = [];
  const update: number[] = [];
  const toResult: number[] = [];
  const plainToUnlink: number[] = [];
  const plainUpdate: number[] = [];
  // The first run warms up and does not count.
  for (let i = -1; i < options.approvals; i++) {
    const jobId = `approval-${i < 0 ? 'warm' : i}`;
    const name = `approve-${i < 0 ? 'warm' : i}.txt`;
    writeFileSync(join(stack.root, name), 'to be deleted\n');
    stack.replay.setScript({ turns: [{ tool_calls: [call('fs_delete', { path: name })] }, completeTurn] });
    await startJob(stack.client, jobId);
    const request = await waitParked(stack.client, jobId);
    // A reviewer decides long after the job parked: let its last workflow task finish first.
    await sleep(300);
    const watcher = whenGone(stack.root, name);
    try {
      const t0 = performance.now();
      const outcome = await stack.airlock.sendDecision(jobId, approval(request));
      const t1 = performance.now();
      if (!outcome.accepted) throw new Error(`${jobId}: decision rejected: ${outcome.code} ${outcome.reason}`);
      const unlinked = await watcher.goneWithin(`${jobId}: the approved file`);
      await completed(stack.client, jobId);
      const t2 = performance.now();
      if (i >= 0) {
        toUnlink.push(unlinked - t0);
        update.push(t1 - t0);
        toResult.push(t2 - t0);
      }
    } finally {
      watcher.close();
    }
    const plain = await plainDecision(stack, i < 0 ? 'warm' : String(i));
    if (i >= 0) {
      plainToUnlink.push(plain.unlinked);
      plainUpdate.push(plain.update);
    }
  }
  const row = (name: string, values: number[], note: string, unit = 'ms'): Figure => ({ part: 'approval', name, unit, ...sampled(values), note });
  const queries = await parkedWriteQueries(stack, options.approvals);
  return [
    row('decide update sent -> approved file unlinked', toUnlink, 'revalidate, grant, execute'),
    row('decide update round trip', update, 'until the client has the update result'),
    row('plain workflow: update sent -> file unlinked', plainToUnlink, 'the same delete in one activity, nothing else'),
    row('plain workflow: update round trip', plainUpdate, 'a handler that only records the decision'),
    row('decide -> unlinked: airlock / plain', pairedRatios(toUnlink, plainToUnlink), 'paired per round', 'ratio'),
    row('decide update sent -> job result', toResult, 'one more model turn (complete)'),
    row('state query, job parked on a small write', queries.small, 'the reviewer view, its arguments masked'),
    row('state query, job parked on a 1 MiB write', queries.big, 'the whole megabyte in the view (masked once, when the job parked)'),
    row('1 MiB / small write, state query', pairedRatios(queries.big, queries.small), 'paired per round', 'ratio'),
  ];
}

/** A plain workflow parked on an update, decided as airlock's job is: update sent → its file unlinked, and the update's round trip. */
async function plainDecision(stack: Stack, tag: string): Promise<{ unlinked: number; update: number }> {
  const name = `plain-approve-${tag}.txt`;
  writeFileSync(join(stack.root, name), 'to be deleted\n');
  const handle = await stack.client.workflow.start(PLAIN_PARKED_WORKFLOW, { taskQueue: PLAIN_TASK_QUEUE, workflowId: `approval-plain-${tag}`, args: [name] });
  await sleep(300);
  const watcher = whenGone(stack.root, name);
  try {
    const t0 = performance.now();
    const decided = await handle.startUpdate(plainDecideUpdate, { args: ['approve'], waitForStage: WorkflowUpdateStage.ACCEPTED });
    await decided.result();
    const t1 = performance.now();
    const unlinked = await watcher.goneWithin(`plain ${tag}: the file`);
    await handle.result();
    return { unlinked: unlinked - t0, update: t1 - t0 };
  } finally {
    watcher.close();
  }
}

/** The largest write: `api_token: …` and a URL with a user and no "@", a shape that once made masking hang. */
const BIG_WRITE = `api_token: s3cr3t-value\nhttps://user:${'ab'.repeat(524_288)}`.slice(0, 1_048_576);
const SMALL_WRITE = 'api_token: s3cr3t-value\nhttps://user:abab';

/** State query round trips of two jobs parked on a write, one small and one of a megabyte; both are approved and complete after. */
async function parkedWriteQueries(stack: Stack, rounds: number): Promise<{ small: number[]; big: number[] }> {
  stack.useRules('approveWrites');
  const jobs = [
    { jobId: 'approval-query-small', content: SMALL_WRITE },
    { jobId: 'approval-query-big', content: BIG_WRITE },
  ] as const;
  const requests = [];
  for (const { jobId, content } of jobs) {
    // The replay server answers by turn, so the second script serves both jobs' `complete` alike.
    stack.replay.setScript({ turns: [{ tool_calls: [call('fs_write', { path: `${jobId}.txt`, content })] }, completeTurn] });
    await startJob(stack.client, jobId);
    requests.push(await waitParked(stack.client, jobId));
  }
  const ask = async (index: number): Promise<number> => {
    const { jobId } = jobs[index]!;
    const { ms, value } = await timed(() => stack.client.workflow.getHandle(jobId).query(stateQuery));
    const shown = (value.pending[0]?.args as { content?: unknown } | undefined)?.content;
    if (typeof shown !== 'string' || !shown.startsWith('api_token: ***\n')) throw new Error(`${jobId}: the query did not show the write masked`);
    return ms;
  };
  await interleaved([0, 1], 1, ask);
  const [small = [], big = []] = await interleaved([0, 1], rounds, ask);
  for (const [i, { jobId }] of jobs.entries()) {
    const outcome = await stack.airlock.sendDecision(jobId, approval(requests[i]!));
    if (!outcome.accepted) throw new Error(`${jobId}: decision rejected: ${outcome.code} ${outcome.reason}`);
    await completed(stack.client, jobId);
  }
  return { small, big };
}
