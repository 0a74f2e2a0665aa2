import type { PlannedCall } from '../core/job/plan-schema';
import type { AgentJobResult } from '../core/job/job-input';
import { Texts } from '../core/job/texts';
import type { Job } from './job';
import type { JobState } from './job-state';

/** A stop rule ends the job: no call of the batch runs, each is told why, and the job is aborted. */
export async function stopJob(job: Job, state: JobState, calls: readonly PlannedCall[], ruleId: string, detail: string): Promise<AgentJobResult> {
  for (const p of calls) state.addToolResult(p.call.callId, Texts.stopped(ruleId), true);
  job.audit.record({ type: 'policy_task_stopped', data: { ruleId, reason: 'policy_stopped' } });
  return job.finish(state, 'aborted', { reason: 'policy_stopped', detail });
}
