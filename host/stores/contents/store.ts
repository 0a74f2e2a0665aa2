import { createHash } from 'node:crypto';

/**
 * The agent side's content-addressed store for conversations: what a job
 * says and reads stays here, and workflow history carries only digests.
 * Every agent worker of a job must reach the same store: this SQLite file
 * on one host, PostgreSQL (`AIRLOCK_CONTENT_DB`) across hosts.
 */
export interface ContentStore {
  /**
   * Stores a text and returns its sha256 (hex); storing it again is a no-op.
   * Texts are JSON, so they hold no NUL character (PostgreSQL's text cannot).
   * With `jobId`, the text is recorded as that job's (two jobs can share a
   * text, such as the same first turn), so retention can tell when no
   * running job needs it.
   */
  put(text: string, jobId?: string): Promise<string>;
  /** The text under a digest, or undefined when the store never held it. */
  get(digest: string): Promise<string | undefined>;
  /**
   * Forgets the texts of jobs that stored nothing for longer than
   * `olderThanMs` and are not running (`running` asks Temporal), except
   * texts another job still refers to; texts stored without a job are
   * kept. How many texts went.
   */
  prune(olderThanMs: number, running: (jobId: string) => Promise<boolean>): Promise<number>;
  close(): Promise<void>;
}

export function digestOf(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
