import type { AirlockConfig } from '../../core/config/config';
import { statePaths } from '../../host/paths';
import { MemoryChallenges, PasskeyInvites, type ChallengeStore, type InviteStore } from '../../host/passkey-invites';

export interface InviteStores {
  readonly invites: InviteStore;
  readonly challenges: ChallengeStore;
  close(): Promise<void>;
}

/**
 * Where passkey invites and registration challenges live: the shared
 * database when one is configured (so any approval page process serves
 * any invite), else the data folder and this process's memory.
 */
export async function openInviteStores(config: AirlockConfig): Promise<InviteStores> {
  if (config.database === undefined) {
    return { invites: new PasskeyInvites(statePaths(config).inboxInvites), challenges: new MemoryChallenges(), close: async () => undefined };
  }
  // Loaded only when a database is configured.
  const { openCheckedDatabase } = await import('../../host/database/open');
  const { PostgresChallenges, PostgresPasskeyInvites } = await import('../../host/postgres-passkey-invites');
  const db = await openCheckedDatabase(config.database, { applicationName: 'airlock-inbox', maxConnections: 2 });
  return { invites: new PostgresPasskeyInvites(db), challenges: new PostgresChallenges(db), close: () => db.close() };
}
