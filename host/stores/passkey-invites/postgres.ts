import { SERVER_NOW_MS as NOW_MS, type Database } from '../database/postgres';
import { INVITE_TTL_MS, inviteSchema, newToken, tokenHash, unknownInvite, usable, type ChallengeStore, type Invite, type InviteStore } from './store';


/** How long an invite stays taken by a registration in progress; one whose process died is usable again after it. */
const TAKEN_MS = 5 * 60_000;

/**
 * Passkey invites in the shared database (`airlock_invites`), so that
 * `airlock reviewer add --passkey` on one machine and any approval page
 * process serve the same invites. Only the token's hash is stored. Taking
 * an invite is one conditional update, so two registrations with one
 * token, in any processes, never both run.
 */
export class PostgresPasskeyInvites implements InviteStore {
  constructor(private readonly db: Database) {}

  async create(reviewer: string): Promise<{ readonly token: string; readonly expiresAt: number }> {
    const token = newToken();
    const result = await this.db.query<{ expires_at: string }>({
      name: 'airlock-invite-create',
      text: `INSERT INTO airlock_invites (token_hash, reviewer, created_at, expires_at) VALUES ($1, $2, now(), ${NOW_MS} + $3) RETURNING expires_at`,
      values: [tokenHash(token), inviteSchema.shape.reviewer.parse(reviewer), INVITE_TTL_MS],
    });
    return { token, expiresAt: Number(result.rows[0]?.expires_at) };
  }

  async read(token: string): Promise<Invite> {
    const result = await this.db.query({
      name: 'airlock-invite-read',
      text: `SELECT reviewer, created_at, expires_at, ${NOW_MS} AS now FROM airlock_invites WHERE token_hash = $1 AND taken_until <= ${NOW_MS}`,
      values: [tokenHash(token)],
    });
    return fromRow(result.rows[0]);
  }

  async consume<T>(token: string, use: (invite: Invite) => Promise<T>): Promise<T> {
    const hash = tokenHash(token);
    const taken = await this.db.query({
      name: 'airlock-invite-take',
      text: `UPDATE airlock_invites SET taken_until = ${NOW_MS} + $2 WHERE token_hash = $1 AND taken_until <= ${NOW_MS}
             RETURNING reviewer, created_at, expires_at, ${NOW_MS} AS now`,
      values: [hash, TAKEN_MS],
    });
    let done = false;
    try {
      const result = await use(fromRow(taken.rows[0]));
      done = true;
      return result;
    } finally {
      if (taken.rows.length > 0) {
        if (done) await this.db.query({ name: 'airlock-invite-used', text: 'DELETE FROM airlock_invites WHERE token_hash = $1', values: [hash] });
        else await this.db.query({ name: 'airlock-invite-return', text: 'UPDATE airlock_invites SET taken_until = 0 WHERE token_hash = $1', values: [hash] }).catch(() => undefined);
      }
    }
  }

  async prune(olderThanMs: number): Promise<number> {
    const result = await this.db.query({ name: 'airlock-invite-prune', text: `DELETE FROM airlock_invites WHERE expires_at < ${NOW_MS} - $1`, values: [Math.round(olderThanMs)] });
    return result.rowCount ?? 0;
  }
}

function fromRow(row: Record<string, unknown> | undefined): Invite {
  if (row === undefined) throw unknownInvite();
  const createdAt = row.created_at instanceof Date ? row.created_at.toISOString() : String(row.created_at);
  const invite = inviteSchema.parse({ schemaVersion: 1, reviewer: row.reviewer, createdAt, expiresAt: Number(row.expires_at) });
  return usable(invite, Number(row.now));
}

/** Challenges in the shared database (`airlock_registration_challenges`), for several approval page processes. */
export class PostgresChallenges implements ChallengeStore {
  constructor(private readonly db: Database) {}

  async put(key: string, challenge: string, ttlMs: number): Promise<void> {
    await this.db.query({ name: 'airlock-challenge-sweep', text: `DELETE FROM airlock_registration_challenges WHERE until <= ${NOW_MS}` });
    await this.db.query({
      name: 'airlock-challenge-put',
      text: `INSERT INTO airlock_registration_challenges (key, challenge, until) VALUES ($1, $2, ${NOW_MS} + $3)
             ON CONFLICT (key) DO UPDATE SET challenge = EXCLUDED.challenge, until = EXCLUDED.until`,
      values: [key, challenge, Math.round(ttlMs)],
    });
  }

  async get(key: string): Promise<string | undefined> {
    const result = await this.db.query<{ challenge: string }>({
      name: 'airlock-challenge-get',
      text: `SELECT challenge FROM airlock_registration_challenges WHERE key = $1 AND until > ${NOW_MS}`,
      values: [key],
    });
    return result.rows[0]?.challenge;
  }

  async delete(key: string): Promise<void> {
    await this.db.query({ name: 'airlock-challenge-delete', text: 'DELETE FROM airlock_registration_challenges WHERE key = $1', values: [key] });
  }

  async take(key: string): Promise<string | undefined> {
    // One statement: of page processes taking the same key at once, the row goes to one.
    const result = await this.db.query<{ challenge: string; valid: boolean }>({
      name: 'airlock-challenge-take',
      text: `DELETE FROM airlock_registration_challenges WHERE key = $1 RETURNING challenge, until > ${NOW_MS} AS valid`,
      values: [key],
    });
    const row = result.rows[0];
    return row !== undefined && row.valid ? row.challenge : undefined;
  }
}
