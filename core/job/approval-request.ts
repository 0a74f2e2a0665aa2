import type { ApprovalRequest, PendingRequest } from '../approval/approvals';
import { approvalRules } from './batch-plan';
import { type Planned } from './plan-schema';
import type { ContentPreview } from '../tools/content-preview';
import type { Reversibility } from '../tools/undo';
import { observedSubject, type ObservedState } from '../tools/observed-state';
import { mergeApprovalSettings } from '../policy/approval-settings';
import { mergeStanding, UNNAMED_REQUESTER, type StandingSettings } from '../approval/standing';
import { parseDuration } from '../util/duration';
import { ruleById } from '../policy/rule-fires';
import type { Rule } from '../policy/rules';
import type { PolicySnapshot } from '../policy/snapshot';
import { getTool } from '../tools/registry';
import { machineOf } from '../tools/machines';

/** What `prepareApproval` saw on the tools side for one gated call. */
export interface PreparedTarget {
  readonly requestId: string;
  readonly nonce: string;
  readonly observed: readonly ObservedState[];
  readonly warnings: readonly string[];
  readonly preview?: ContentPreview;
  readonly undo?: Reversibility;
}

/**
 * The request a reviewer decides: every approval rule on the call is
 * honoured (shortest TTL, only reviewers and editable fields all allow,
 * any signature or separation demand), and its reason names them all.
 */
export function buildApprovalRequest(input: {
  readonly snapshot: PolicySnapshot;
  readonly planned: Planned<'approval'>;
  readonly prepared: PreparedTarget;
  readonly requester: string;
  readonly now: number;
}): PendingRequest {
  const { planned, prepared, now } = input;
  const machine = machineOf(input.snapshot.machines, planned.call.toolName, planned.call.args);
  const gating = approvalRules(input.snapshot, planned.evaluation);
  const settings = mergeApprovalSettings(gating);
  const nobody =
    settings.reviewers !== null && settings.reviewers.length === 0 ? ['no reviewer is allowed by every rule: this request can only expire'] : [];
  const reason = [
    ...gating.map((r) => [r.name, r.instruction].filter((x) => x !== undefined).join(' — ')),
    ...prepared.warnings,
    ...nobody,
  ].join(' — ');
  return {
    requestId: prepared.requestId,
    callId: planned.call.callId,
    toolName: planned.call.toolName,
    args: planned.call.args,
    fingerprint: planned.fingerprint,
    nonce: prepared.nonce,
    ruleId: planned.ruleId,
    ruleVersion: planned.ruleVersion,
    reason: reason === '' ? (ruleById(input.snapshot, planned.ruleId)?.name ?? planned.ruleId) : reason,
    editable: settings.editable,
    reviewers: settings.reviewers,
    separateRequester: settings.separateRequester,
    signatureRequired: settings.signatureRequired,
    requester: input.requester,
    observed: [...prepared.observed],
    ...(prepared.preview !== undefined ? { preview: prepared.preview } : {}),
    ...(machine !== undefined ? { machine } : {}),
    ...undoOf(prepared.undo, settings.notKeptBy),
    // A job whose requester nobody named ("unknown") shares that name with every other: nothing may stand for it.
    ...(input.requester === UNNAMED_REQUESTER ? {} : standingOf(gating)),
    createdAt: now,
    expiresAt: now + settings.ttlMs,
    status: 'pending',
  };
}

/** What a standing approval of this request may be: present only when every gating rule allows one. */
function standingOf(gating: readonly Rule[]): { standing?: StandingSettings } {
  const merged = mergeStanding(
    gating.map((r) => {
      const s = r.approval?.standing;
      return { id: r.id, version: r.version, standing: s === undefined ? undefined : { maxForMs: parseDuration(s.maxFor) ?? 0, maxUses: s.maxUses, varies: s.varies } };
    }),
  );
  return merged === undefined ? {} : { standing: merged };
}

/** Whether the change will be kept for undo, as the card says: the tools side's answer, unless a gating rule chose to keep nothing. */
function undoOf(undo: Reversibility | undefined, notKeptBy: Rule | null): { undo?: Reversibility } {
  if (undo === undefined) return {};
  if (notKeptBy === null) return { undo };
  return { undo: { reversible: false, why: `the rule ${notKeptBy.id} (${notKeptBy.name}) keeps nothing of it for undo`, byRule: notKeptBy.id } };
}

/** What a request acts on, as the reviewer sees it: the observed paths (canonical), else the call's own; `nas:/srv/…` on a machine of several. */
export function requestTarget(request: ApprovalRequest): string | undefined {
  const observed = request.observed.map(observedSubject);
  const paths = observed.length > 0 ? observed : (getTool(request.toolName)?.targets(request.args) ?? []);
  return paths.length === 0 ? undefined : onMachine(request.machine, paths.join(' → '));
}

/** A target with the machine it is on, as `scp` writes it: `nas:/srv/share/x`; unchanged with one machine. */
export function onMachine(machine: string | undefined, target: string): string {
  return machine === undefined ? target : `${machine}:${target}`;
}
