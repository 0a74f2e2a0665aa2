import { makeContinueAsNewFunc } from '@temporalio/workflow';
import { AGENT_JOB_WORKFLOW } from '../../core/job/job-input';
import { TaskQueues } from '../../core/temporal/task-queues';

/**
 * An attacker's workflow: it continues as new into `agentJob` with input of
 * its own making, so the new run looks like a real continue-as-new.
 */
export async function rogueContinueAsNew(next: unknown): Promise<void> {
  await makeContinueAsNewFunc({ workflowType: AGENT_JOB_WORKFLOW, taskQueue: TaskQueues.agent })(next);
}
