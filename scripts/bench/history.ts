import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import type { Client } from '@temporalio/client';
import type { History } from '@temporalio/common/lib/proto-utils';
import type { Figure } from './figures';
import { completed, readTurns, startJob } from './jobs';
import { logCounts } from './bench-log';
import type { Stack } from './stack';

/**
 * History growth: bytes (the sum of each event's protobuf size) and events
 * of jobs of 1, 10 and 50 turns with one allowed read each, for a small file
 * and for a 16,000-character one. A job that continues as new is counted
 * over all its runs.
 */

const TURN_COUNTS = [1, 10, 50] as const;
const BIG_CHARS = 16_000;

interface Measured {
  readonly bytes: number;
  readonly events: number;
  readonly runs: number;
}

/** Every run of the job, following each continue-as-new to the next run. */
async function measureChain(client: Client, jobId: string, firstRunId: string): Promise<Measured> {
  let bytes = 0;
  let events = 0;
  let runs = 0;
  let runId: string | undefined = firstRunId;
  while (runId !== undefined) {
    const history: History = await client.workflow.getHandle(jobId, runId).fetchHistory();
    const list = history.events ?? [];
    for (const event of list) bytes += temporal.api.history.v1.HistoryEvent.encode(event).finish().byteLength;
    events += list.length;
    runs++;
    runId = list[list.length - 1]?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return { bytes, events, runs };
}

export async function historyPart(stack: Stack): Promise<Figure[]> {
  stack.useRules('builtIn');
  writeFileSync(join(stack.root, 'big.txt'), 'x'.repeat(BIG_CHARS - 1) + '\n');
  const sizes = [
    { file: 'f0.txt', label: 'small read' },
    { file: 'big.txt', label: `${BIG_CHARS.toLocaleString('en-US')}-char read` },
  ];
  const figures: Figure[] = [];
  const warningsBefore = logCounts.payloadWarnings;
  for (const size of sizes) {
    const measured = new Map<number, Measured>();
    for (const turns of TURN_COUNTS) {
      const jobId = `history-${turns}-${size.file.replace('.txt', '')}`;
      stack.replay.setScript(readTurns(turns, () => size.file));
      const handle = await startJob(stack.client, jobId, { maxTurns: turns + 5 });
      await completed(stack.client, jobId);
      const m = await measureChain(stack.client, jobId, handle.firstExecutionRunId);
      measured.set(turns, m);
      const note = `job total ${m.bytes.toLocaleString('en-US')} B, ${m.events} events, ${m.runs} run(s), over read turns (start, complete included)`;
      figures.push({ part: 'history', name: `${turns} turn(s) x 1 ${size.label}: bytes per turn`, unit: 'B', value: Math.round(m.bytes / turns), n: 1, note });
      figures.push({ part: 'history', name: `${turns} turn(s) x 1 ${size.label}: events per turn`, unit: 'events', value: Number((m.events / turns).toFixed(1)), n: 1 });
    }
    // The cost of one more turn late in a job: each model turn carries the whole conversation so far.
    const a = measured.get(10);
    const b = measured.get(50);
    if (a !== undefined && b !== undefined) {
      figures.push({ part: 'history', name: `turns 11-50, ${size.label}: bytes per added turn`, unit: 'B', value: Math.round((b.bytes - a.bytes) / 40), n: 1, note: '(50-turn job - 10-turn job) / 40' });
      figures.push({ part: 'history', name: `turns 11-50, ${size.label}: events per added turn`, unit: 'events', value: Number(((b.events - a.events) / 40).toFixed(1)), n: 1 });
    }
  }
  figures.push({
    part: 'history',
    name: 'payload-size warnings from the workers (TMPRL1103)',
    unit: 'lines',
    value: logCounts.payloadWarnings - warningsBefore,
    note: 'payloads over 512 KiB, during this part',
  });
  return figures;
}
