import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
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

const inviteSchema = z.strictObject({
  schemaVersion: z.literal(1),
  // The names `reviewer add` takes: an edited invite cannot name anyone else.
  reviewer: z.string().regex(reviewerNamePattern),
  createdAt: z.string(),
  expiresAt: z.number(),
});
export type Invite = z.infer<typeof inviteSchema>;

const tokenPattern = /^[A-Za-z0-9_-]{32,100}$/;

function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

const again = (reviewer?: string) => `run \`airlock reviewer add ${reviewer ?? 'NAME'} --passkey\` again for a new link`;

/**
 * Single-use invites to register a passkey for a reviewer. Only the
 * token's hash is stored (a file per invite, 0600), so the folder alone
 * cannot register anything; the token itself travels in the link's
 * fragment, which browsers never send to a server or in a Referer.
 */
export class PasskeyInvites {
  constructor(
    readonly dir: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new invite for `reviewer`; returns the token (shown once, never stored). */
  create(reviewer: string): { readonly token: string; readonly expiresAt: number } {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const token = randomBytes(32).toString('base64url');
    const expiresAt = this.now() + INVITE_TTL_MS;
    const invite: Invite = { schemaVersion: 1, reviewer, createdAt: new Date(this.now()).toISOString(), expiresAt };
    writeFileSync(this.file(token), JSON.stringify(invite), { mode: 0o600, flag: 'wx' });
    return { token, expiresAt };
  }

  /** The invite a token stands for, if it is usable now. */
  read(token: string): Invite {
    return this.readFile(this.file(token));
  }

  /**
   * Uses an invite once: it is taken (renamed) while `use` runs, so a
   * second registration with the same token is refused meanwhile, deleted
   * when `use` succeeds and put back when it fails.
   */
  async consume<T>(token: string, use: (invite: Invite) => Promise<T>): Promise<T> {
    const file = this.file(token);
    const taken = `${file}.taken-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      renameSync(file, taken);
    } catch {
      throw new InviteError(`this registration link was already used or is not known here; ${again()}`, 'unknown');
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

  private file(token: string): string {
    if (!tokenPattern.test(token)) throw new InviteError(`this registration link is not complete (the part after # is missing or cut); ${again()}`, 'unknown');
    return join(this.dir, `${tokenHash(token)}.json`);
  }

  private readFile(file: string): Invite {
    let raw: string;
    try {
      raw = readFileSync(file, 'utf8');
    } catch {
      throw new InviteError(`this registration link was already used or is not known here; ${again()}`, 'unknown');
    }
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      json = undefined;
    }
    const parsed = inviteSchema.safeParse(json);
    if (!parsed.success) throw new InviteError(`this registration invite cannot be read; ${again()}`, 'unknown');
    if (this.now() >= parsed.data.expiresAt) {
      throw new InviteError(`this registration link for ${parsed.data.reviewer} expired at ${new Date(parsed.data.expiresAt).toISOString()}; ${again(parsed.data.reviewer)}`, 'expired');
    }
    return parsed.data;
  }
}
