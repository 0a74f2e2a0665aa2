import { z } from 'zod';
import { UNNAMED_REQUESTER } from '../approval/standing';
import { offeredByDefault, sideEffectToolNames } from '../tools/registry';
import { UPSTREAM_TOOL_NAME } from '../tools/upstream/upstream-spec';
import type { AuditHealth } from '../audit/backlog';
import type { AuditEvent } from '../audit/events';
import type { JobFacts } from './job-facts';

/** The workflow type name of a job. */
export const AGENT_JOB_WORKFLOW = 'agentJob';

export const jobScopeSchema = z.strictObject({
  piece: z.string().min(1).max(200).optional(),
  movement: z.string().min(1).max(200).optional(),
});

export const agentJobInputSchema = z.strictObject({
  schemaVersion: z.literal(1),
  goal: z.string().trim().min(1, 'goal must not be empty').max(20_000),
  /** Model turns before the job fails with `max_turns`. */
  maxTurns: z.number().int().min(1).max(1000).default(30),
  /** Tools this job may use; defaults to every registered tool. */
  tools: z
    .array(z.string())
    .refine((names) => names.every((n) => sideEffectToolNames.includes(n) || UPSTREAM_TOOL_NAME.test(n)), {
      message: `tools must be registered tool names (${sideEffectToolNames.join(', ')}) or an MCP server's (mcp_<server>_<tool>)`,
    })
    .optional(),
  /** Who asked for the job; a rule may forbid them from approving its requests. */
  requester: z.string().min(1).max(200).default(UNNAMED_REQUESTER),
  scope: jobScopeSchema.default({}),
  /** Approval requests one job may raise; further gated calls are denied. */
  maxApprovalRequests: z.number().int().min(0).max(1000).default(20),
  /** Continue-as-new once history holds this many events (the server's suggestion also applies). */
  historyEventLimit: z.number().int().min(10).max(50_000).optional(),
  /**
   * Who proposes the calls: the model (absent, the default), or a client
   * that submits them (`submitCall`, the MCP gateway), through the same gate.
   */
  driver: z.enum(['model', 'client']).optional(),
  /** A client-driven job that ends, completed, once this many of its calls are answered (`airlock undo`: one); absent: it takes calls until cancelled. */
  takesCalls: z.number().int().min(1).max(1000).optional(),
  /** Set only by the job itself when it continues as new; parsed with its own versioned schema. */
  carried: z.unknown().optional(),
  /** The agent worker's seal over the rest of this input when it carries state; see `host/keys/seal.ts`. */
  carriedSeal: z.string().max(200).optional(),
});
export type AgentJobInput = z.input<typeof agentJobInputSchema>;
export type ParsedAgentJobInput = z.output<typeof agentJobInputSchema>;

/** The tools a job may use: those it asked for (default: all), less those its workers' tools config cannot run. */
export function allowedToolsFor(input: ParsedAgentJobInput, available?: readonly string[]): string[] {
  // Not asked for any in particular: every tool the config can run, an upstream MCP server's included.
  if (input.tools === undefined) return offeredByDefault(available ?? sideEffectToolNames);
  return available === undefined ? input.tools : input.tools.filter((name) => available.includes(name));
}

export const jobOutcomes = ['completed', 'aborted', 'failed'] as const;
export type JobOutcome = (typeof jobOutcomes)[number];

/** Why a job that did not complete ended. */
export type JobEndReason = 'policy_stopped' | 'max_turns' | 'model_error' | 'state_too_large';

export interface AgentJobResult {
  readonly schemaVersion: 1;
  readonly status: JobOutcome;
  /** Why it ended when not completed. */
  readonly reason?: JobEndReason;
  /** Detail for people: the stopping rule, the model error. */
  readonly detail?: string;
  /** The summary given to `complete`: the model's own words, not a record of what ran (see `facts`). */
  readonly summary?: string;
  /** What the job knows happened to the calls a reviewer was asked about (absent in results of builds before). */
  readonly facts?: JobFacts;
  readonly turns: number;
  /**
   * Set when audit writes failed in the job; `unwritten` events were not
   * written when it ended. `events` holds them, sanitized (absent from
   * builds before): `airlock audit --recover` writes them back.
   */
  readonly audit?: AuditHealth & { readonly events?: readonly AuditEvent[] };
}
