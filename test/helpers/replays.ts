import type { History } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { testServer } from './temporal-env';

/**
 * Replays one recorded run against the test server's workflow bundle. A run
 * that does not replay fails with its events listed, so the interleaving
 * that did not replay can be rebuilt from the failure alone.
 */
export async function expectRunReplays(history: History, workflowId: string, name = workflowId): Promise<void> {
  try {
    await Worker.runReplayHistory({ workflowBundle: { codePath: testServer.bundle }, replayName: name }, history, workflowId);
  } catch (err) {
    const events = (history.events ?? []).map((e) => `${String(e.eventId)}:${temporal.api.enums.v1.EventType[e.eventType ?? 0]?.replace('EVENT_TYPE_', '') ?? String(e.eventType)}`).join(' ');
    throw new Error(`${name} did not replay: ${String(err)}\nevents: ${events}`);
  }
}
