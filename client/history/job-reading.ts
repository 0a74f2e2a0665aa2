import type { CallFacts } from '../../core/tools/facts';
import type { ToolCall } from '../../core/job/preflight';
import type { Happened, PlannedToolKind } from '../../core/job/rehearsal';
import type { PolicySnapshot } from '../../core/policy/snapshot';
import type { TakenCall } from './submitted-calls';

/** What a reading of one job keeps: each call and its fate, the requests still open, and what the job's runs share. */

export interface CallRecord {
  call: ToolCall;
  planned: PlannedToolKind;
  ruleId: string | null;
  happened: Happened;
  facts: CallFacts | undefined;
  /** For a gated call: the plan's fingerprint, which a decision must carry. */
  fingerprint?: string;
  /** For a gated call of a client-driven job, when its rules are known: how long its request waits. */
  ttlMs?: number;
}

export interface OpenRequest {
  readonly record: CallRecord;
  readonly nonce: string;
  /** Workflow time its request expires, when known (a client-driven job's). */
  readonly expiresAt: number | undefined;
}

/** What one job's runs share: requests parked in one run may be decided in the next. */
export interface JobReading {
  readonly requests: Map<string, OpenRequest>;
  /** The tools' roots in the job's own snapshot (for `outside_roots`). */
  roots: string[] | undefined;
  /** The job's own snapshot, when this build reads it: a request's lifetime comes from its rules. */
  snapshot: PolicySnapshot | undefined;
  readonly batches: Array<{ runId: string; at: number; calls: CallRecord[] }>;
  /** A client-driven job's calls taken so far, by key: a retry of one in a later run is no new call. */
  readonly clientCalls: Map<string, TakenCall>;
}

/** Who brought the job's calls: its model turns, or a client's `submitCall` updates. */
export type Driver = 'model' | 'client';
