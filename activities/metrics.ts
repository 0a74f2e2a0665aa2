import { noopMetricMeter, type MetricCounter, type MetricHistogram, type MetricMeter } from '@temporalio/common';
import type { AuditEvent } from '../core/audit/events';
import { gateDecisions } from '../core/policy/call-evaluation';
import { getTool } from '../core/tools/registry';
import type { Reconciled } from '../host/stores/nonces/store';
import type { JudgeOutcome } from '../core/judge/judge';

/**
 * airlock's own Prometheus metrics, counted in activities: a replayed
 * workflow does not run its activities again (local ones resolve from
 * their markers), so nothing is counted twice by replay.
 *
 * Labels are bounded: rule ids come from the rules file, tool names from
 * the registry, the rest from fixed sets; anything else is `other`. Never
 * a job id.
 */
export interface AirlockMetrics {
  /** The job's decisions, counted from the audit events an agent activity writes (first attempt only, as the log). */
  audited(events: readonly AuditEvent[]): void;
  auditWriteFailed(): void;
  /** One `execute` that returned: how it ended. */
  executed(toolName: string, outcome: ExecutionOutcome): void;
  /** A call settled from its target after the attempt that consumed its nonce died. */
  reconciled(toolName: string, result: Reconciled): void;
  /** A judge call that went to the model (cached answers are not timed). */
  judged(status: JudgeOutcome['status'], latencyMs: number): void;
}

export type ExecutionOutcome = 'ok' | 'failed' | 'refused' | 'replayed' | Reconciled;

/** Metric names, as served on `/metrics`. */
export const MetricNames = {
  approvalsRequested: 'airlock_approvals_requested_total',
  approvalsDecided: 'airlock_approvals_decided_total',
  approvalsExpired: 'airlock_approvals_expired_total',
  policyDecisions: 'airlock_policy_decisions_total',
  executions: 'airlock_executions_total',
  reconciliations: 'airlock_reconciliations_total',
  auditWriteFailures: 'airlock_audit_write_failures_total',
  judgeLatency: 'airlock_judge_latency_milliseconds',
} as const;

type MetricName = (typeof MetricNames)[keyof typeof MetricNames];

const descriptions: Record<MetricName, string> = {
  [MetricNames.approvalsRequested]: 'approval requests created, by rule',
  [MetricNames.approvalsDecided]: 'approval requests decided by a reviewer, by rule and decision',
  [MetricNames.approvalsExpired]: 'approval requests that expired undecided, by rule',
  [MetricNames.policyDecisions]: 'policy decisions on tool calls (an edited call is evaluated again), by action and tool',
  [MetricNames.executions]: 'execute activities that returned, by tool and outcome',
  [MetricNames.reconciliations]: 'calls settled from their target after the attempt that consumed the nonce died, by tool and result',
  [MetricNames.auditWriteFailures]: 'audit writes that failed (their events are lost; jobs go on)',
  [MetricNames.judgeLatency]: 'judge model calls (not cached answers), by status',
};

/** Judge latency buckets (ms): the judge's budget is seconds (`AIRLOCK_JUDGE_TIMEOUT_MS`, 3000 by default). */
export const JUDGE_LATENCY_BUCKETS_MS = [25, 50, 100, 250, 500, 1000, 2000, 3000, 5000, 10_000, 30_000];

const OTHER = 'other';

/** Rule ids as the rules file allows them; anything else (or nothing) is not a label value. */
function ruleLabel(ruleId: string | null | undefined): string {
  return ruleId !== null && ruleId !== undefined && /^[A-Za-z0-9._-]{1,100}$/.test(ruleId) ? ruleId : OTHER;
}

function toolLabel(toolName: string): string {
  return getTool(toolName) === undefined ? OTHER : toolName;
}

function actionLabel(decision: string): string {
  return (gateDecisions as readonly string[]).includes(decision) ? decision : OTHER;
}

/**
 * Instruments are created on first use, from the meter the worker's
 * runtime serves (which exists only once the runtime is installed).
 */
export function createAirlockMetrics(meterOf: () => MetricMeter): AirlockMetrics {
  const counters = new Map<string, MetricCounter>();
  let latency: MetricHistogram | undefined;
  const add = (name: MetricName, labels: Record<string, string>) =>
    safely(() => {
      let c = counters.get(name);
      if (c === undefined) {
        c = meterOf().createCounter(name, '', descriptions[name]);
        counters.set(name, c);
      }
      c.add(1, labels);
    });

  return {
    audited(events) {
      for (const e of events) {
        switch (e.type) {
          case 'approval_requested':
            add(MetricNames.approvalsRequested, { rule: ruleLabel(e.data.ruleId) });
            break;
          case 'approval_decided':
            add(MetricNames.approvalsDecided, {
              rule: ruleLabel(e.data.ruleId),
              decision: e.data.decision === 'approve' || e.data.decision === 'deny' ? e.data.decision : OTHER,
            });
            break;
          case 'approval_expired':
            add(MetricNames.approvalsExpired, { rule: ruleLabel(e.data.ruleId) });
            break;
          case 'policy_evaluation':
            add(MetricNames.policyDecisions, {
              action: actionLabel(e.data.decision),
              tool: toolLabel(e.data.toolName),
            });
            break;
          default:
            break;
        }
      }
    },
    auditWriteFailed() {
      add(MetricNames.auditWriteFailures, {});
    },
    executed(toolName, outcome) {
      add(MetricNames.executions, { tool: toolLabel(toolName), outcome });
    },
    reconciled(toolName, result) {
      add(MetricNames.reconciliations, { tool: toolLabel(toolName), result });
    },
    judged(status, latencyMs) {
      safely(() => {
        latency ??= meterOf().createHistogram(MetricNames.judgeLatency, 'int', 'ms', descriptions[MetricNames.judgeLatency]);
        latency.record(Math.max(0, Math.round(latencyMs)), { status });
      });
    },
  };
}

/** Metrics never break a job: a failing instrument loses the sample, not the call. */
function safely(count: () => void): void {
  try {
    count();
  } catch {
    // Nothing to do: the endpoint misses one sample.
  }
}

/** Counts nothing: for activities built without a metrics endpoint (tests, tools). */
export const noMetrics: AirlockMetrics = createAirlockMetrics(() => noopMetricMeter);
