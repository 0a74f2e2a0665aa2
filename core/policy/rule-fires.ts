import { z } from 'zod';
import { type GateDecision, type RuleCounters, ruleMatchSchema } from './call-evaluation';
import { type Rule } from './rules';
import type { PolicySnapshot } from './snapshot';

/** What a batch of decisions comes to, and the counters a rule's fires keep. */

export function ruleById(snapshot: PolicySnapshot, id: string): Rule | undefined {
  return snapshot.rules.find((r) => r.id === id);
}

/** A rule that acted on a call, with the call's state fingerprint. */
export const ruleFireSchema = ruleMatchSchema.extend({ stateFingerprint: z.string().optional() });
export type RuleFire = z.infer<typeof ruleFireSchema>;

/** Advances fire counters for the rules that acted (duplicates and shadows do not count). */
export function recordFires(counters: RuleCounters, fires: readonly RuleFire[], now: number): RuleCounters {
  const next: Record<string, RuleCounters[string]> = { ...counters };
  for (const f of fires) {
    if (f.shadow || f.duplicate === true) continue;
    next[f.ruleId] = {
      fires: (next[f.ruleId]?.fires ?? 0) + 1,
      lastFiredAt: now,
      ...(f.stateFingerprint !== undefined ? { lastFingerprint: f.stateFingerprint } : {}),
    };
  }
  return next;
}

/** Per batch: any stop ends the job; any approval parks it; any redirect re-plans; otherwise it runs. */
export type BatchOutcome = 'stop' | 'park' | 'redirect' | 'run';

export function batchOutcome(decisions: readonly GateDecision[]): BatchOutcome {
  if (decisions.includes('stop')) return 'stop';
  if (decisions.includes('require_approval')) return 'park';
  if (decisions.includes('redirect')) return 'redirect';
  return 'run';
}
