import type { AirlockConfig } from '../../core/config/config';
import { statePaths } from '../../host/config/paths';
import { MemoryChallenges, type ChallengeStore, type InviteStore } from '../../host/stores/passkey-invites/store';
import { PasskeyInvites } from '../../host/stores/passkey-invites/files';

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
  const { openCheckedDatabase } = await import('../../host/stores/database/open');
  const { PostgresChallenges, PostgresPasskeyInvites } = await import('../../host/stores/passkey-invites/postgres');
  const db = await openCheckedDatabase(config.database, { applicationName: 'airlock-inbox', maxConnections: 2 });
  return { invites: new PostgresPasskeyInvites(db), challenges: new PostgresChallenges(db), close: () => db.close() };
}
