import { allHandlersFinished, makeContinueAsNewFunc, workflowInfo } from '@temporalio/workflow';
import type { AgentJobInput, AgentJobResult } from '../core/job/job-input';
import { canonicalJson } from '../core/util/canonical-json';
import { sha256Hex } from '../core/util/sha256';
import { local } from './activities';
import type { Job } from './job';
import type { JobState } from './job-state';

type AgentJob = (input: AgentJobInput) => Promise<AgentJobResult>;

/** Temporal refuses a payload over 2 MB; the seal and the encoding need a little room. */
const MAX_CARRIED_CHARS = 1_800_000;

/**
 * Continues the job as new with its state sealed by the agent worker, once
 * its handlers are drained and its audit written; or ends it clearly when
 * the state would not fit the next run's input (the server would refuse
 * it). `upgrade`: the next run starts on the current build instead of this
 * run's.
 */
export async function continueAsNew(job: Job, state: JobState, how: { readonly upgrade: boolean } = { upgrade: false }): Promise<AgentJobResult> {
  const { carried: _previous, carriedSeal: _seal, ...input } = job.input;
  for (;;) {
    await job.drain();
    const { audit: _carriedAudit, ...carried } = state.carried();
    const audit = job.audit.carried();
    const next = { ...input, carried: audit !== undefined ? { ...carried, audit } : carried };
    const size = JSON.stringify(next).length;
    if (size > MAX_CARRIED_CHARS) {
      return job.finish(state, 'failed', { reason: 'state_too_large', detail: `the job's state (${size} characters) is too large to continue as new` });
    }
    const { seal, sealedDigest } = await local.sealState({ jobId: job.jobId, next });
    // Every handler audits: a decision that landed while sealing changed the state, so seal again.
    // The digest catches any other way the input changed after it was handed to the seal.
    const sealedThis = sealedDigest === undefined || sealedDigest === sha256Hex(canonicalJson(next));
    if (sealedThis && allHandlersFinished() && job.audit.fresh === 0) {
      // The memo is not carried by the server: the next run starts with the pending requests it publishes.
      const versioning = how.upgrade ? { initialVersioningBehavior: 'AUTO_UPGRADE' as const } : {};
      return makeContinueAsNewFunc<AgentJob>({ memo: workflowInfo().memo ?? {}, ...versioning })({ ...next, carriedSeal: seal });
    }
  }
}
