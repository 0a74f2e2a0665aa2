import { z } from 'zod';
import type { StandingRecord, StandingUse, StandingView } from '../../../core/approval/standing';
import type { Database } from '../database/postgres';
import { type StandingApprovals, type StandingUseRow, useRefusal, viewOf } from './store';

const SELECT = `SELECT s.record, s.revoked_at, s.revoked_by, s.revoked_reason,
  (SELECT count(*) FROM airlock_standing_uses u WHERE u.standing_id = s.id) AS used FROM airlock_standing_approvals s`;

const useRowSchema = z.object({ n: z.coerce.number(), use_key: z.string(), used_at: z.coerce.number() });

/** Standing approvals in the shared database (tables `airlock_standing_approvals`, `airlock_standing_uses`), for every agent worker on every machine. */
export class PostgresStandingApprovals implements StandingApprovals {
  constructor(private readonly db: Database) {}

  async put(record: StandingRecord): Promise<void> {
    await this.db.query({
      text: `INSERT INTO airlock_standing_approvals (id, tool_name, requester, created_at, until_ms, uses, record) VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (id) DO NOTHING`,
      values: [record.id, record.scope.toolName, record.scope.requester, record.createdAt, record.until, record.uses, JSON.stringify(record)],
    });
  }

  async candidates(query: { toolName: string; requester: string; now: number }): Promise<StandingView[]> {
    const { rows } = await this.db.query({
      text: `${SELECT} WHERE s.tool_name = $1 AND s.requester = $2 AND s.revoked_at IS NULL AND s.until_ms > $3 ORDER BY s.until_ms, s.id`,
      values: [query.toolName, query.requester, query.now],
    });
    return rows.flatMap((row) => viewOf(row) ?? []);
  }

  async use(id: string, key: string, now: number): Promise<StandingUse> {
    return this.db.transaction(async (q): Promise<StandingUse> => {
      // The approval's row is locked first: uses of one approval are counted one transaction at a time.
      const locked = await q.query({ text: 'SELECT id FROM airlock_standing_approvals WHERE id = $1 FOR UPDATE', values: [id] });
      if (locked.rows.length === 0) return { ok: false, why: 'unknown' };
      const view = viewOf((await q.query({ text: `${SELECT} WHERE s.id = $1`, values: [id] })).rows[0]);
      if (view === undefined) return { ok: false, why: 'unknown' };
      const taken = await q.query<{ n: number }>({ text: 'SELECT n FROM airlock_standing_uses WHERE standing_id = $1 AND use_key = $2', values: [id, key] });
      const before = taken.rows[0];
      if (before !== undefined) return { ok: true, use: Number(before.n), left: view.record.uses - view.used };
      const refused = useRefusal(view, now);
      if (refused !== undefined) return { ok: false, why: refused };
      const n = view.used + 1;
      await q.query({ text: 'INSERT INTO airlock_standing_uses (standing_id, use_key, n, used_at) VALUES ($1, $2, $3, $4)', values: [id, key, n, now] });
      return { ok: true, use: n, left: view.record.uses - n };
    });
  }

  async revoke(id: string, by: string, reason: string, now: number): Promise<'revoked' | 'already' | 'unknown'> {
    const updated = await this.db.query({
      text: 'UPDATE airlock_standing_approvals SET revoked_at = $1, revoked_by = $2, revoked_reason = $3 WHERE id = $4 AND revoked_at IS NULL',
      values: [now, by, reason, id],
    });
    if ((updated.rowCount ?? 0) > 0) return 'revoked';
    const { rows } = await this.db.query({ text: 'SELECT 1 FROM airlock_standing_approvals WHERE id = $1', values: [id] });
    return rows.length === 0 ? 'unknown' : 'already';
  }

  async get(id: string): Promise<StandingView | undefined> {
    const { rows } = await this.db.query({ text: `${SELECT} WHERE s.id = $1`, values: [id] });
    return viewOf(rows[0]);
  }

  async list(options: { all: boolean; now: number }): Promise<StandingView[]> {
    const { rows } = await this.db.query(`${SELECT} ORDER BY s.created_at DESC, s.id`);
    const views = rows.flatMap((row) => viewOf(row) ?? []);
    return options.all ? views : views.filter((v) => useRefusal(v, options.now) === undefined);
  }

  async usesOf(id: string): Promise<StandingUseRow[]> {
    const { rows } = await this.db.query({ text: 'SELECT n, use_key, used_at FROM airlock_standing_uses WHERE standing_id = $1 ORDER BY n', values: [id] });
    return rows.map((row) => {
      const r = useRowSchema.parse(row);
      return { use: r.n, useKey: r.use_key, at: r.used_at };
    });
  }

  async close(): Promise<void> {
    // The database belongs to the process.
  }
}
