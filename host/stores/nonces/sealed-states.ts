import type { Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { observedStateSchema, type ObservedState } from '../../../core/tools/observed-state';
import type { AesGcmCodec } from '../../temporal/payload-codec';
import type { ConsumeResult, NonceRecord, NonceStore, StoredOutcome } from './store';
import type { UndoQuery, UndoRecord, UndoState } from './undo-records';

type Earlier = Extract<ConsumeResult, { consumed: false }>;

/** The one state a sealed row holds in place of the targets it recorded. */
const SEALED = 'airlock-sealed-states';

/**
 * A nonce store whose recorded target states (service names and states,
 * command identities, file facts) are encrypted with the payload keys
 * before they are stored: a database shared by machines, or a backup of
 * it, shows no more of a call than its ids, times and outcome digests.
 * Rows written before the keys existed are read as they are.
 */
export class SealedStatesNonceStore implements NonceStore {
  constructor(
    private readonly inner: NonceStore,
    private readonly codec: AesGcmCodec,
  ) {}

  get id(): string {
    return this.inner.id;
  }
  get origin(): NonceStore['origin'] {
    return this.inner.origin;
  }
  get where(): string {
    return this.inner.where;
  }

  async consume(record: NonceRecord): Promise<ConsumeResult> {
    const sealed = record.before === undefined ? record : { ...record, before: [await this.seal(record.before)] };
    const result = await this.inner.consume(sealed);
    return result.consumed ? result : this.opened(result);
  }

  async lookup(nonce: string): Promise<Earlier | undefined> {
    const found = await this.inner.lookup(nonce);
    return found === undefined ? undefined : this.opened(found);
  }

  claim(nonce: string, staleMs: number): Promise<boolean> {
    return this.inner.claim(nonce, staleMs);
  }
  renew(nonce: string): Promise<void> {
    return this.inner.renew(nonce);
  }
  silentFor(nonce: string): Promise<number | undefined> {
    return this.inner.silentFor(nonce);
  }
  recordOutcome(nonce: string, outcome: StoredOutcome): Promise<void> {
    return this.inner.recordOutcome(nonce, outcome);
  }
  prune(olderThanMs: number): Promise<number> {
    return this.inner.prune(olderThanMs);
  }
  // Undo records pass through unsealed: their path is already a digest, but their root and the held entry's facts are stored as they are.
  recordUndo(record: UndoRecord): Promise<boolean> {
    return this.inner.recordUndo(record);
  }
  reviseUndo(record: UndoRecord): Promise<boolean> {
    return this.inner.reviseUndo(record);
  }
  undoRecord(nonce: string): Promise<UndoRecord | undefined> {
    return this.inner.undoRecord(nonce);
  }
  undoRecords(query: UndoQuery): Promise<UndoRecord[]> {
    return this.inner.undoRecords(query);
  }
  settleUndo(nonce: string, to: Exclude<UndoState, 'held'>): Promise<boolean> {
    return this.inner.settleUndo(nonce, to);
  }
  expiredUndo(now: number, limit: number): Promise<UndoRecord[]> {
    return this.inner.expiredUndo(now, limit);
  }
  undoRecordOfCall(jobId: string, callId: string): Promise<UndoRecord | undefined> {
    return this.inner.undoRecordOfCall(jobId, callId);
  }
  heldBytes(root: string): Promise<number> {
    return this.inner.heldBytes(root);
  }
  pruneUndo(olderThanMs: number): Promise<number> {
    return this.inner.pruneUndo(olderThanMs);
  }
  close(): Promise<void> {
    return this.inner.close();
  }

  private async seal(before: readonly ObservedState[]): Promise<ObservedState> {
    const plain: Payload = { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(before)) };
    const [sealed] = await this.codec.encode([plain]);
    const bytes = temporal.api.common.v1.Payload.encode(sealed ?? {}).finish();
    return { kind: 'subject', subject: SEALED, exists: true, identity: null, summary: 'encrypted', facts: { sealed: Buffer.from(bytes).toString('base64') } };
  }

  private async opened(result: Earlier): Promise<Earlier> {
    if (result.before === undefined) return result;
    const [first] = result.before;
    if (result.before.length !== 1 || first === undefined || !('kind' in first) || first.kind !== 'subject' || first.subject !== SEALED) return result;
    const text = first.facts.sealed;
    // Unreadable (another key, a damaged row): the row is treated as one without states; reconciliation then knows less, never more.
    const { before: _sealed, ...rest } = result;
    if (typeof text !== 'string') return { ...rest };
    try {
      const [plain] = await this.codec.decode([temporal.api.common.v1.Payload.decode(Buffer.from(text, 'base64'))]);
      const parsed = observedStateSchema.array().safeParse(JSON.parse(Buffer.from(plain?.data ?? []).toString('utf8')));
      return parsed.success ? { ...result, before: parsed.data } : { ...rest };
    } catch {
      return { ...rest };
    }
  }
}
