import type Database from 'better-sqlite3';
import { z } from 'zod';
import type { StandingRecord, StandingUse, StandingView } from '../../../core/approval/standing';
import { openSqlite } from '../database/sqlite';
import { type StandingApprovals, type StandingUseRow, useRefusal, viewOf } from './store';

const SELECT = `SELECT s.record, s.revoked_at, s.revoked_by, s.revoked_reason,
  (SELECT count(*) FROM standing_uses u WHERE u.standing_id = s.id) AS used FROM standing_approvals s`;

const useRowSchema = z.object({ n: z.number(), use_key: z.string(), used_at: z.number() });

/** Standing approvals in a SQLite file of the agent's data folder (0600); every worker of the folder shares it. */
export class SqliteStandingApprovals implements StandingApprovals {
  private readonly db: Database.Database;

  constructor(file: string) {
    this.db = openSqlite(file);
    this.db.exec(`CREATE TABLE IF NOT EXISTS standing_approvals (
      id TEXT PRIMARY KEY,
      tool_name TEXT NOT NULL,
      requester TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      until_ms INTEGER NOT NULL,
      uses INTEGER NOT NULL,
      record TEXT NOT NULL,
      revoked_at INTEGER,
      revoked_by TEXT,
      revoked_reason TEXT
    )`);
    this.db.exec(`CREATE TABLE IF NOT EXISTS standing_uses (
      standing_id TEXT NOT NULL,
      use_key TEXT NOT NULL,
      n INTEGER NOT NULL,
      used_at INTEGER NOT NULL,
      PRIMARY KEY (standing_id, use_key),
      UNIQUE (standing_id, n),
      UNIQUE (use_key)
    )`);
    this.db.exec('CREATE INDEX IF NOT EXISTS standing_approvals_match ON standing_approvals (tool_name, requester)');
  }

  async put(record: StandingRecord): Promise<void> {
    this.db
      .prepare(
        `INSERT INTO standing_approvals (id, tool_name, requester, created_at, until_ms, uses, record) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO NOTHING`,
      )
      .run(record.id, record.scope.toolName, record.scope.requester, record.createdAt, record.until, record.uses, JSON.stringify(record));
  }

  async candidates(query: { toolName: string; requester: string; now: number }): Promise<StandingView[]> {
    const rows = this.db.prepare(`${SELECT} WHERE s.tool_name = ? AND s.requester = ? AND s.revoked_at IS NULL AND s.until_ms > ? ORDER BY s.until_ms, s.id`).all(query.toolName, query.requester, query.now);
    return rows.flatMap((row) => viewOf(row) ?? []);
  }

  async use(id: string, key: string, now: number): Promise<StandingUse> {
    // IMMEDIATE: the write lock is taken before the count is read, so two processes never count the same uses.
    const take = this.db.transaction((): StandingUse => {
      const view = viewOf(this.db.prepare(`${SELECT} WHERE s.id = ?`).get(id));
      if (view === undefined) return { ok: false, why: 'unknown' };
      const taken = this.db.prepare('SELECT n FROM standing_uses WHERE standing_id = ? AND use_key = ?').get(id, key) as { n: number } | undefined;
      if (taken !== undefined) return { ok: true, use: taken.n, left: view.record.uses - view.used };
      const refused = useRefusal(view, now);
      if (refused !== undefined) return { ok: false, why: refused };
      const n = view.used + 1;
      this.db.prepare('INSERT INTO standing_uses (standing_id, use_key, n, used_at) VALUES (?, ?, ?, ?)').run(id, key, n, now);
      return { ok: true, use: n, left: view.record.uses - n };
    });
    return take.immediate();
  }

  async revoke(id: string, by: string, reason: string, now: number): Promise<'revoked' | 'already' | 'unknown'> {
    const changed = this.db.prepare('UPDATE standing_approvals SET revoked_at = ?, revoked_by = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL').run(now, by, reason, id).changes;
    if (changed > 0) return 'revoked';
    return this.db.prepare('SELECT 1 FROM standing_approvals WHERE id = ?').get(id) === undefined ? 'unknown' : 'already';
  }

  async get(id: string): Promise<StandingView | undefined> {
    return viewOf(this.db.prepare(`${SELECT} WHERE s.id = ?`).get(id));
  }

  async list(options: { all: boolean; now: number }): Promise<StandingView[]> {
    const rows = this.db.prepare(`${SELECT} ORDER BY s.created_at DESC, s.id`).all();
    const views = rows.flatMap((row) => viewOf(row) ?? []);
    return options.all ? views : views.filter((v) => useRefusal(v, options.now) === undefined);
  }

  async usesOf(id: string): Promise<StandingUseRow[]> {
    const rows = this.db.prepare('SELECT n, use_key, used_at FROM standing_uses WHERE standing_id = ? ORDER BY n').all(id);
    return rows.map((row) => {
      const r = useRowSchema.parse(row);
      return { use: r.n, useKey: r.use_key, at: r.used_at };
    });
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
