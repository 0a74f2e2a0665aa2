import type { Grant } from '../../core/approval/grants';
import type { JobScope } from '../../core/policy/rules';
import type { ContentPreview } from '../../core/tools/content-preview';
import type { ObservedState } from '../../core/tools/observed-state';
import type { ToolOutcome } from '../../core/tools/tool-module';
import type { Reversibility } from '../../core/tools/undo';
import type { Reconciled } from '../../host/stores/nonces/store';

/**
 * What the tools queue's gate activities take and give: `prepareApproval`
 * when a call parks, `revalidate` and `execute` when it runs.
 */

/** Every tools call names the machine it is for (absent with one machine); a worker of another refuses it. */
export interface OnMachine {
  readonly machine?: string;
}

export interface PrepareApprovalInput extends OnMachine {
  readonly toolName: string;
  readonly args: Record<string, unknown>;
}

export interface PrepareApprovalResult {
  readonly requestId: string;
  /** 128 bits from the OS's cryptographic RNG. */
  readonly nonce: string;
  readonly observed: ObservedState[];
  /** Problems the reviewer should know about, e.g. a target the tool will refuse. */
  readonly warnings: string[];
  /** What a write would change in the file's content (absent for other tools, and from builds before). */
  readonly preview?: ContentPreview;
  /** Whether the change can be undone (tools that can keep one; absent from builds before). */
  readonly undo?: Reversibility;
}

export interface RevalidateInput extends OnMachine {
  readonly toolName: string;
  /** The arguments that will run (edited ones when the reviewer edited the call). */
  readonly args: Record<string, unknown>;
  /**
   * The targets `prepareApproval` observed, compared position by position
   * (only the targets: the arguments travel once, a large write stays under
   * Temporal's payload limit). Builds before sent `originalArgs` instead.
   */
  readonly originalTargets?: readonly string[];
  readonly originalArgs?: Record<string, unknown>;
  readonly allowedTools: readonly string[];
  readonly reviewer: string;
  readonly reviewers: readonly string[] | null;
  readonly separateRequester: boolean;
  readonly requester: string;
  /** What the reviewer saw, one entry per original target. */
  readonly observed: readonly ObservedState[];
  /** The card said the change is reversible: it runs only if it can still keep its undo (absent: nothing was promised). */
  readonly reversible?: boolean;
  /** A rule chose the change not reversible (the card said so): nothing is kept for undo, even where it could be. */
  readonly keep?: false;
}

export type RevalidateResult =
  | { readonly ok: true }
  /** `notNeeded`: the tool says the call has nothing left to do (a service healthy again); not a failure, and the model is told so. */
  | { readonly ok: false; readonly reason: string; readonly notNeeded?: true };

/** What an approved call is checked against right before it runs: `RevalidateInput` without what `execute` carries anyway. */
export type ApprovedCheck = Omit<RevalidateInput, 'toolName' | 'args' | 'machine'>;

export interface ExecuteInput extends OnMachine {
  readonly jobId: string;
  readonly callId: string;
  readonly scope: JobScope;
  readonly toolName: string;
  readonly args: Record<string, unknown>;
  /** The gating rule, null for an ungated call: part of the fingerprint the grant binds. */
  readonly ruleId: string | null;
  readonly ruleVersion: number | null;
  readonly grant: Grant;
  /**
   * For an approved call: schema, permission and the targets as the
   * reviewer saw them, checked in the same attempt, right before the side
   * effect (one round trip fewer than a separate `revalidate`, and a
   * shorter window between the check and the use).
   */
  readonly approved?: ApprovedCheck;
}

export type ExecuteResult =
  | (ToolOutcome & {
      /** True when this reports an earlier attempt's stored outcome instead of running again. */
      readonly replayed: boolean;
      readonly refused?: undefined;
      readonly notNeeded?: undefined;
      /**
       * Set when an earlier attempt ended without recording an outcome and
       * this one settled the call from its target: the effect was in place
       * (`ran_before`), or it was not and the target was as before the call,
       * so it ran now (`ran_now`), or neither could be told (`unknown`, `ok`
       * false). Absent in results from builds before reconciliation.
       */
      readonly reconciled?: Reconciled;
    })
  /** The approved call no longer holds: nothing ran and the nonce is unspent. */
  | { readonly refused: string; readonly ok: false; readonly output: string; readonly replayed: false; readonly notNeeded?: undefined; readonly reconciled?: undefined }
  /** The approved call has nothing left to do (the tool's revalidation says why): nothing ran, the nonce is unspent, and this is no failure. */
  | { readonly notNeeded: string; readonly ok: true; readonly output: string; readonly replayed: false; readonly refused?: undefined; readonly reconciled?: undefined };

/**
 * Where a test may stop `execute`: after consuming the nonce, after the
 * effect and before its outcome is recorded, half way through writing a
 * new file, or inside a bulk move after N entries moved and the next one
 * renamed, before its journal says so.
 */
export type CrashPoint = 'after-consume' | 'after-effect' | 'mid-write' | `mid-batch:${number}` | `mid-undo:${number}`;
