import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { AirlockError } from '../../../core/util/errors';
import { reviewerNamePattern } from '../../keys/reviewer-key-file';

/** How long an invite to register a passkey stays usable. */
export const INVITE_TTL_MS = 15 * 60_000;

/** An invite that cannot be used: unknown, already used, expired or unreadable. */
export class InviteError extends AirlockError {
  override name = 'InviteError';
  constructor(
    message: string,
    readonly reason: 'unknown' | 'expired' | 'busy',
  ) {
    super(message);
  }
}

export const inviteSchema = z.strictObject({
  schemaVersion: z.literal(1),
  // The names `reviewer add` takes: an edited invite cannot name anyone else.
  reviewer: z.string().regex(reviewerNamePattern),
  createdAt: z.string(),
  expiresAt: z.number(),
});
export type Invite = z.infer<typeof inviteSchema>;

const tokenPattern = /^[A-Za-z0-9_-]{32,100}$/;

/** The token's hash, the only thing of it stored; a token that cannot be one is refused here. */
export function tokenHash(token: string): string {
  if (!tokenPattern.test(token)) throw new InviteError(`this registration link is not complete (the part after # is missing or cut); ${again()}`, 'unknown');
  return createHash('sha256').update(token).digest('hex');
}

/** A new token: 256 bits, base64url. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

export const again = (reviewer?: string) => `run \`airlock reviewer add ${reviewer ?? 'NAME'} --passkey\` again for a new link`;

/**
 * Single-use invites to register a passkey for a reviewer. Only the
 * token's hash is stored, so the store alone cannot register anything; the
 * token itself travels in the link's fragment, which browsers never send to
 * a server or in a Referer. Kept in the data folder (`PasskeyInvites`), or
 * in the shared database so that several approval page processes serve the
 * same invites (`PostgresPasskeyInvites`).
 */
export interface InviteStore {
  /** A new invite for `reviewer`; returns the token (shown once, never stored). */
  create(reviewer: string): Promise<{ readonly token: string; readonly expiresAt: number }>;
  /** The invite a token stands for, if it is usable now. */
  read(token: string): Promise<Invite>;
  /**
   * Uses an invite once: it is taken while `use` runs, so a second
   * registration with the same token is refused meanwhile, gone when `use`
   * succeeds and put back when it fails.
   */
  consume<T>(token: string, use: (invite: Invite) => Promise<T>): Promise<T>;
  /** Forgets invites that expired longer ago than this; how many. */
  prune(olderThanMs: number): Promise<number>;
}

/** An invite's expiry checked: usable now, or an `InviteError` saying when it expired. */
export function usable(invite: Invite, now: number): Invite {
  if (now >= invite.expiresAt) {
    throw new InviteError(`this registration link for ${invite.reviewer} expired at ${new Date(invite.expiresAt).toISOString()}; ${again(invite.reviewer)}`, 'expired');
  }
  return invite;
}

export const unknownInvite = () => new InviteError(`this registration link was already used or is not known here; ${again()}`, 'unknown');

/** A registration's challenge, by the invite's token hash. */
interface IssuedChallenge {
  readonly challenge: string;
  /** The store's clock, ms. */
  readonly until: number;
}

/**
 * Where the approval page keeps the challenge it issued for a
 * registration until the browser answers: in its own memory, or in the
 * shared database so that the answer may reach another page process.
 */
export interface ChallengeStore {
  put(key: string, challenge: string, ttlMs: number): Promise<void>;
  /** The challenge if it is still valid. */
  get(key: string): Promise<string | undefined>;
  delete(key: string): Promise<void>;
  /** The challenge if it is still valid, removed in the same step: of callers taking one key at once, one gets it. */
  take(key: string): Promise<string | undefined>;
}

/** Challenges in this process's memory (one approval page process). */
export class MemoryChallenges implements ChallengeStore {
  private readonly issued = new Map<string, IssuedChallenge>();

  constructor(private readonly now: () => number = Date.now) {}

  async put(key: string, challenge: string, ttlMs: number): Promise<void> {
    const now = this.now();
    for (const [k, v] of this.issued) if (v.until <= now) this.issued.delete(k);
    this.issued.set(key, { challenge, until: now + ttlMs });
  }

  async get(key: string): Promise<string | undefined> {
    const found = this.issued.get(key);
    return found === undefined || found.until <= this.now() ? undefined : found.challenge;
  }

  async delete(key: string): Promise<void> {
    this.issued.delete(key);
  }

  async take(key: string): Promise<string | undefined> {
    const found = this.issued.get(key);
    this.issued.delete(key);
    return found === undefined || found.until <= this.now() ? undefined : found.challenge;
  }
}
