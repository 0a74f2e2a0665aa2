import { AirlockError } from '../../../core/util/errors';
import type { ChatMessage } from '../../../core/model/chat';
import { segmentSchema, type Segment } from '../../../core/job/conversation';
import type { ContentStore } from './store';

/** A job's conversation is not (or no longer) in the content store. */
export class ConversationMissingError extends AirlockError {
  override name = 'ConversationMissingError';
}

const CACHED_CONVERSATIONS = 200;

/**
 * Reads and writes conversations as chains of segments in the content
 * store. The last conversations read are kept whole, so a job's next turn
 * reads one segment, not its whole chain.
 */
export class ConversationReader {
  private readonly cache = new Map<string, readonly ChatMessage[]>();

  constructor(private readonly contents: ContentStore) {}

  async read(head: string | null): Promise<readonly ChatMessage[]> {
    if (head === null) return [];
    const cached = this.cache.get(head);
    if (cached !== undefined) return cached;
    const segments: Segment[] = [];
    let at: string | null = head;
    const seen = new Set<string>();
    while (at !== null && !this.cache.has(at)) {
      if (seen.has(at)) throw new ConversationMissingError(`conversation segment ${at} refers back to itself`);
      seen.add(at);
      const text = await this.contents.get(at);
      if (text === undefined) {
        throw new ConversationMissingError(`conversation segment ${at} is not in the content store; it was written by an agent worker with another content store (AIRLOCK_DATABASE_URL, or AIRLOCK_DATA_DIR when that is unset), or removed by retention`);
      }
      const segment = segmentSchema.parse(JSON.parse(text));
      segments.unshift(segment);
      at = segment.prev;
    }
    const base = at === null ? [] : (this.cache.get(at) ?? []);
    const messages = [...base, ...segments.flatMap((s) => s.messages)];
    this.remember(head, messages);
    return messages;
  }

  /** Stores a segment (as `jobId`'s) and returns its digest, the conversation's new head. */
  async store(segment: Segment, jobId?: string): Promise<string> {
    const head = await this.contents.put(JSON.stringify(segment), jobId);
    this.remember(head, [...(await this.read(segment.prev)), ...segment.messages]);
    return head;
  }

  private remember(head: string, messages: readonly ChatMessage[]): void {
    this.cache.delete(head);
    this.cache.set(head, messages);
    while (this.cache.size > CACHED_CONVERSATIONS) {
      const oldest = this.cache.keys().next();
      if (oldest.done === true) break;
      this.cache.delete(oldest.value);
    }
  }
}
