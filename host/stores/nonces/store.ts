import { createHash } from 'node:crypto';
import { z } from 'zod';
import { AirlockError } from '../../../core/util/errors';
import { isFileState, observedStateSchema, type ObservedState } from '../../../core/tools/observed-state';
import type { UndoRecords } from './undo-records';

/** How a retried `execute` settled a call whose earlier attempt never recorded its outcome. */
export type Reconciled = 'ran_before' | 'ran_now' | 'unknown';

/**
 * What `execute` recorded after running a granted call: whether it worked,
 * and only the size and digest of its output. Tool output (a file read, a
 * listing) may hold secrets and never stays in the store.
 */
export interface StoredOutcome {
  readonly ok: boolean;
  readonly outputBytes: number;
  readonly outputSha256: string;
  /** Set when a retry settled the call by checking the target (the crashed attempt's own outcome was lost). */
  readonly reconciled?: Reconciled;
}

const storedOutcomeSchema = z.object({
  ok: z.boolean(),
  outputBytes: z.number().optional(),
  outputSha256: z.string().optional(),
  reconciled: z.enum(['ran_before', 'ran_now', 'unknown']).optional(),
});

export function storedOutcome(outcome: { readonly ok: boolean; readonly output: string }, reconciled?: Reconciled): StoredOutcome {
  return {
    ok: outcome.ok,
    outputBytes: Buffer.byteLength(outcome.output),
    outputSha256: createHash('sha256').update(outcome.output).digest('hex'),
    ...(reconciled !== undefined ? { reconciled } : {}),
  };
}

export type ConsumeResult =
  | { readonly consumed: true }
  /** Already consumed; `outcome` is null when the earlier attempt never reported back. */
  | {
      readonly consumed: false;
      readonly outcome: StoredOutcome | null;
      readonly consumedAt: string;
      /** The targets as the consuming attempt saw them right before its effect, paths as digests (absent in rows from before). */
      readonly before?: readonly ObservedState[];
    };

export interface NonceRecord {
  readonly nonce: string;
  readonly jobId: string;
  readonly callId: string;
  readonly fingerprint: string;
  /** The targets right before the effect: what a retry compares against to tell "not run" from "ran" (stored with paths as digests). */
  readonly before?: readonly ObservedState[];
}

/**
 * Paths are kept as digests: a file's name can be a secret (`token=…`), and
 * the store keeps nothing people could read one from. A retry matches them
 * against the paths it observes (`revealPaths`).
 */
export function pathDigest(path: string): string {
  return `sha256:${createHash('sha256').update(path, 'utf8').digest('hex')}`;
}

/** The recorded states with their paths back, where they match the targets' paths now (by position); others keep the digest and so compare as moved. */
export function revealPaths(before: readonly ObservedState[], current: readonly ObservedState[]): ObservedState[] {
  return before.map((state, i) => {
    const now = current[i];
    if (now === undefined || !isFileState(state) || !isFileState(now)) return state;
    return state.path === pathDigest(now.path) ? { ...state, path: now.path } : state;
  });
}

/** The store cannot be used (its file is not a database, or was replaced under the worker); the worker stops with this one line. */
export class NonceStoreUnusable extends AirlockError {
  override name = 'NonceStoreUnusable';
}

/** How the store came to be, for the worker's start-up log. */
/** The store has no row for a nonce this attempt consumed: it lost it. */
export function lostNonce(nonce: string, where: string): NonceStoreUnusable {
  return new NonceStoreUnusable(`the nonce store ${where} no longer holds nonce ${nonce}, which this attempt consumed (a crash lost it); the next attempt settles the call from its target`);
}

export type StoreOrigin =
  | { readonly kind: 'opened' }
  | { readonly kind: 'created' }
  /** The identity file next to it says a store existed here, but its database file is gone. */
  | { readonly kind: 'replaced_lost'; readonly lostId: string };


/**
 * The tools side's durable record of consumed grant nonces and of what each
 * call did. Consuming is a compare-and-set (insert-if-absent) done before
 * any side effect, so a retried activity or a replayed decision can never
 * run a call twice. Every tools worker acting on the same resources shares
 * one store: the embedded SQLite file on one machine
 * (`SqliteNonceStore`), the PostgreSQL database across machines
 * (`PostgresNonceStore`); both pass the same conformance tests.
 */
export interface NonceStore extends UndoRecords {
  /** The store's identity, written into every row: a store lost and replaced is noticed by the identity changing. */
  readonly id: string;
  readonly origin: StoreOrigin;
  /** Where the store is, for messages (a file, or the database with its password hidden). */
  readonly where: string;
  /** Consumes the nonce if no one has; otherwise says what the store knows of the earlier consume. */
  consume(record: NonceRecord): Promise<ConsumeResult>;
  lookup(nonce: string): Promise<Extract<ConsumeResult, { consumed: false }> | undefined>;
  /**
   * Takes over a consumed nonce without an outcome, for a retry to settle
   * it: only when the attempt holding it has not renewed it for `staleMs`
   * (a live attempt renews it while it works), and only one taker wins.
   */
  claim(nonce: string, staleMs: number): Promise<boolean>;
  /** The attempt working on a consumed nonce is alive. */
  renew(nonce: string): Promise<void>;
  /**
   * How long the holder of a consumed nonce without an outcome has been
   * silent (ms since it consumed, claimed or renewed it), by the clock
   * `claim` uses; undefined when the nonce has an outcome or is unknown.
   */
  silentFor(nonce: string): Promise<number | undefined>;
  /**
   * Records what a consumed nonce's call did. A nonce the store no longer
   * holds (a database that lost a commit in a crash) is refused with
   * `NonceStoreUnusable`: the attempt fails, and its retry settles the call
   * from its target instead of the outcome going nowhere.
   */
  recordOutcome(nonce: string, outcome: StoredOutcome): Promise<void>;
  /** Forgets nonces consumed longer ago than this (their grants expired long before); how many. */
  prune(olderThanMs: number): Promise<number>;
  close(): Promise<void>;
}

/** The recorded targets as stored: paths as digests, so the store keeps no file name. */
export function beforeText(before: readonly ObservedState[] | undefined): string | null {
  return before === undefined ? null : JSON.stringify(before.map((state) => (isFileState(state) ? { ...state, path: pathDigest(state.path) } : state)));
}

export function outcomeText(outcome: StoredOutcome): string {
  return JSON.stringify({
    ok: outcome.ok,
    outputBytes: outcome.outputBytes,
    outputSha256: outcome.outputSha256,
    ...(outcome.reconciled !== undefined ? { reconciled: outcome.reconciled } : {}),
  });
}

/** A stored outcome; rows written before outputs were dropped keep only whether the call worked. */
export function parseOutcome(text: string): StoredOutcome {
  const parsed = storedOutcomeSchema.safeParse(JSON.parse(text));
  if (!parsed.success) return { ok: false, outputBytes: 0, outputSha256: '' };
  const { ok, outputBytes, outputSha256, reconciled } = parsed.data;
  return { ok, outputBytes: outputBytes ?? 0, outputSha256: outputSha256 ?? '', ...(reconciled !== undefined ? { reconciled } : {}) };
}

/** The recorded targets; a row that does not parse is treated as one without them (reconciliation then knows less, never more). */
export function parseBefore(text: string): ObservedState[] | undefined {
  const parsed = z.array(observedStateSchema).safeParse(JSON.parse(text));
  return parsed.success ? parsed.data : undefined;
}
