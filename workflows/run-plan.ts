import type { AgentJobResult } from '../core/job/job-input';
import { park } from './approvals';
import type { Evaluated } from './policy-check';
import type { Job } from './job';
import type { JobState } from './job-state';
import { redirectBatch, runBatch } from './run-calls';
import { stopJob } from './stop';

/**
 * What a decided batch becomes, for both drivers (the model's turns and a
 * client's calls): a stop ends the job, a redirect answers every call and
 * asks the model to re-plan, a park waits for reviewers, and a batch that
 * may run runs. The job's result when it ended, else undefined.
 */
export async function runPlan(job: Job, state: JobState, { plan, grants, prepared }: Evaluated): Promise<AgentJobResult | undefined> {
  switch (plan.outcome) {
    case 'stop':
      return stopJob(job, state, plan.calls, plan.stoppedBy, `stopped by rule ${plan.stoppedBy}`);
    case 'redirect':
      redirectBatch(job, state, plan);
      return undefined;
    case 'park':
      await park(job, state, plan, prepared);
      return undefined;
    case 'run':
      return runBatch(job, state, plan, grants);
  }
}
