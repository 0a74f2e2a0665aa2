import type { PasskeyCounters } from '../host/stores/passkey-counters/store';
import type { StandingApprovals } from '../host/stores/standing-approvals/store';
import { createStandingActivities } from './standing';
import type { ReviewerKeys } from '../host/keys/reviewer-keys';
import { createAuditActivities } from './audit';
import { createJudgeActivities, type JudgeDeps } from './judge';
import { createModelActivities, type ModelDeps } from './model-turn';
import { createPolicyActivities, type PolicyDeps } from './policy';
import { createSealActivities } from './seals';
import { createReviewerActivities } from './verify-decision';
import { createTargetFactActivities } from './target-facts';
import { createTurnPolicy } from './turn-policy';
import type { ContentStore } from '../host/stores/contents/store';
import { createToolGateActivities, createToolRunner, prepareCall, type ToolGateDeps } from './tool-gate';

export interface AgentActivityDeps extends ModelDeps, PolicyDeps {
  readonly contents: ContentStore;
  /** Keys for signed decisions; empty: a signed decision cannot be verified and is rejected. */
  readonly reviewerKeys: ReviewerKeys;
  /** The signature counter each passkey last presented; unset: counters are not tracked. */
  readonly passkeyCounters?: PasskeyCounters;
  /** Standing approvals every agent worker shares; unset: none is kept or used, every gated call asks. */
  readonly standing?: StandingApprovals;
}
export type ToolActivityDeps = ToolGateDeps;
export type JudgeActivityDeps = JudgeDeps;

/** airlock-agent: model turns, policy evaluation and grants, audit. */
export function createAgentActivities(deps: AgentActivityDeps) {
  return {
    // The model turn also asks the policy check and carries the job's audit events (see turn-policy.ts).
    ...createModelActivities({ ...deps, gate: createTurnPolicy(deps), auditDeps: deps }),
    ...createPolicyActivities(deps),
    ...createAuditActivities(deps),
    ...createReviewerActivities(deps),
    ...createStandingActivities(deps),
    ...createSealActivities(deps),
  };
}

/** airlock-tools: target facts, prepare / revalidate / execute, where the side effects happen. */
export function createToolActivities(deps: ToolActivityDeps) {
  const runner = createToolRunner(deps);
  return { ...createTargetFactActivities({ ...deps, prepare: (input) => prepareCall(runner, input) }), ...createToolGateActivities(deps, runner) };
}

export { createJudgeActivities };

export type AgentActivities = ReturnType<typeof createAgentActivities>;
export type ToolActivities = ReturnType<typeof createToolActivities>;
export type JudgeActivities = ReturnType<typeof createJudgeActivities>;

export interface ActivityDeps {
  readonly agent?: AgentActivityDeps;
  readonly tools?: ToolActivityDeps;
  readonly judge?: JudgeActivityDeps;
}

export interface Activities {
  readonly agent: AgentActivities | undefined;
  readonly tools: ToolActivities | undefined;
  readonly judge: JudgeActivities | undefined;
}

/**
 * Builds the activities of each queue from its dependencies: workers pass
 * real ones, tests pass their own. Only the queues given are built.
 */
export function createActivities(deps: ActivityDeps): Activities {
  return {
    agent: deps.agent === undefined ? undefined : createAgentActivities(deps.agent),
    tools: deps.tools === undefined ? undefined : createToolActivities(deps.tools),
    judge: deps.judge === undefined ? undefined : createJudgeActivities(deps.judge),
  };
}
