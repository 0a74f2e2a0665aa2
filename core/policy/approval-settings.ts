import { parseDuration } from '../util/duration';
import type { Rule } from './rules';

export const DEFAULT_APPROVAL_TTL_MS = 24 * 60 * 60 * 1000;

export interface ApprovalSettings {
  readonly ttlMs: number;
  /** null: anyone may decide; empty: nobody can (the request can only expire). */
  readonly reviewers: string[] | null;
  readonly editable: string[];
  readonly separateRequester: boolean;
  readonly signatureRequired: boolean;
  /** A rule that chose the change not reversible (`approval.reversible: false`); null when none did. */
  readonly notKeptBy: Rule | null;
}

/**
 * When several approval rules gate one call, the request honours all of
 * them: the shortest TTL, only reviewers every rule allows, only fields every
 * rule lets a reviewer edit, any rule's signature or separation demand, and
 * any rule's choice to keep nothing for undo.
 */
export function mergeApprovalSettings(rules: readonly Rule[]): ApprovalSettings {
  let ttlMs = Number.POSITIVE_INFINITY;
  let reviewers: string[] | null = null;
  let editable: string[] | null = null;
  let separateRequester = false;
  let signatureRequired = false;
  let notKeptBy: Rule | null = null;
  for (const rule of rules) {
    const a = rule.approval;
    ttlMs = Math.min(ttlMs, parseDuration(a?.ttl ?? '') ?? DEFAULT_APPROVAL_TTL_MS);
    const allowed = a?.reviewers;
    if (allowed !== undefined) reviewers = reviewers === null ? [...allowed] : reviewers.filter((r) => allowed.includes(r));
    const fields = a?.editable ?? [];
    editable = editable === null ? [...fields] : editable.filter((f) => fields.includes(f));
    separateRequester ||= a?.separateRequester ?? false;
    signatureRequired ||= a?.signatureRequired ?? false;
    if (a?.reversible === false) notKeptBy ??= rule;
  }
  return {
    ttlMs: Number.isFinite(ttlMs) ? ttlMs : DEFAULT_APPROVAL_TTL_MS,
    reviewers,
    editable: editable ?? [],
    separateRequester,
    signatureRequired,
    notKeptBy,
  };
}
