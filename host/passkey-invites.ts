import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { AirlockError } from '../core/util/errors';
import { reviewerNamePattern } from './reviewer-key-file';

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

/** Invites as files of the data folder, one per token hash (0600). */
export class PasskeyInvites implements InviteStore {
  constructor(
    readonly dir: string,
    private readonly now: () => number = Date.now,
  ) {}

  async create(reviewer: string): Promise<{ readonly token: string; readonly expiresAt: number }> {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const token = newToken();
    const expiresAt = this.now() + INVITE_TTL_MS;
    const invite: Invite = { schemaVersion: 1, reviewer, createdAt: new Date(this.now()).toISOString(), expiresAt };
    writeFileSync(this.file(token), JSON.stringify(invite), { mode: 0o600, flag: 'wx' });
    return { token, expiresAt };
  }

  async read(token: string): Promise<Invite> {
    return this.readFile(this.file(token));
  }

  /** Taken by renaming the file, deleted on success, renamed back on failure. */
  async consume<T>(token: string, use: (invite: Invite) => Promise<T>): Promise<T> {
    const file = this.file(token);
    const taken = `${file}.taken-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      renameSync(file, taken);
    } catch {
      throw unknownInvite();
    }
    let done = false;
    try {
      const invite = this.readFile(taken);
      const result = await use(invite);
      done = true;
      return result;
    } finally {
      if (done) unlinkSync(taken);
      else {
        try {
          renameSync(taken, file);
        } catch {
          // Gone meanwhile: nothing to put back.
        }
      }
    }
  }

  async prune(olderThanMs: number): Promise<number> {
    const before = this.now() - olderThanMs;
    let removed = 0;
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return 0;
    }
    for (const name of names) {
      const file = join(this.dir, name);
      let stale: boolean;
      if (name.endsWith('.json')) {
        const parsed = inviteSchema.safeParse(readJson(file));
        // One that cannot be read stays: it is never removed unseen.
        stale = parsed.success && parsed.data.expiresAt < before;
      } else {
        // Taken by a registration whose process died: put back long ago or never.
        stale = name.includes('.taken-') && statSync(file).mtimeMs < before;
      }
      if (!stale) continue;
      unlinkSync(file);
      removed++;
    }
    return removed;
  }

  private file(token: string): string {
    return join(this.dir, `${tokenHash(token)}.json`);
  }

  private readFile(file: string): Invite {
    let raw: string;
    try {
      raw = readFileSync(file, 'utf8');
    } catch {
      throw unknownInvite();
    }
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      json = undefined;
    }
    const parsed = inviteSchema.safeParse(json);
    if (!parsed.success) throw new InviteError(`this registration invite cannot be read; ${again()}`, 'unknown');
    return usable(parsed.data, this.now());
  }
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}
