import { proxyActivities } from '@temporalio/workflow';

// A stand-in `agentJob` that schedules a different first command: replaying a
// recorded history against it must fail, which proves the replay test can.
const { somethingElse } = proxyActivities<{ somethingElse(): Promise<void> }>({ startToCloseTimeout: '1 minute' });

export async function agentJob(): Promise<void> {
  await somethingElse();
}
