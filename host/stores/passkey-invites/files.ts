import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { INVITE_TTL_MS, type Invite, InviteError, type InviteStore, again, inviteSchema, newToken, tokenHash, unknownInvite, usable } from './store';

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
