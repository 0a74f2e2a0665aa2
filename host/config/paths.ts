import { join, resolve } from 'node:path';
import type { AirlockConfig } from '../../core/config/config';

/** Where each piece of local state lives, from configuration; relative paths are taken from the working directory. */
export function statePaths(config: AirlockConfig) {
  const dataDir = resolve(config.dataDir);
  return {
    dataDir,
    sandbox: join(dataDir, 'sandbox'),
    roots: config.roots?.map((r) => resolve(r)) ?? [join(dataDir, 'sandbox')],
    rulesFile: config.rulesFile === undefined ? undefined : resolve(config.rulesFile),
    grantPrivateKey: resolve(config.grants.privateKeyFile ?? join(dataDir, 'keys', 'grant-ed25519.pem')),
    grantPublicKey: resolve(config.grants.publicKeyFile ?? join(dataDir, 'keys', 'grant-ed25519.pub.pem')),
    /** Reviewer name → public key, read by the agent workers; `airlock dev` and `airlock reviewer add` write it. */
    reviewerKeys: resolve(config.reviewerKeysFile ?? join(dataDir, 'keys', 'reviewers.yaml')),
    reviewerKeyDir: join(dataDir, 'keys', 'reviewers'),
    /** Payload encryption keys (`airlock dev --codec` creates them); the codec is on when this file exists. */
    codecKeys: resolve(config.codec.keysFile ?? join(dataDir, 'keys', 'codec.yaml')),
    /** The codec server's bearer token, created on its first start. */
    codecToken: join(dataDir, 'keys', 'codec-server.token'),
    /** Passkey registration invites of `airlock reviewer add --passkey`, a file per token hash. */
    inboxInvites: join(dataDir, 'inbox', 'invites'),
    nonces: join(dataDir, 'tools', 'nonces.sqlite'),
    /** Journals of multi-step calls (bulk moves), a file per grant nonce. */
    journals: join(dataDir, 'tools', 'journals'),
    /** Conversations of the jobs, content-addressed (history carries digests). */
    contents: join(dataDir, 'agent', 'contents.sqlite'),
    /** The signature counter each passkey last presented (agent workers). */
    passkeyCounters: join(dataDir, 'agent', 'passkey-counters.sqlite'),
    /** Standing approvals and their uses (agent workers; `airlock standing` reads and revokes them). */
    standingApprovals: join(dataDir, 'agent', 'standing-approvals.sqlite'),
    audit: join(dataDir, 'audit', 'audit.jsonl'),
    /** The bearer tokens of MCP agents (`airlock agent add`), their hashes only. */
    agentTokens: join(dataDir, 'mcp', 'agent-tokens.sqlite'),
    /** Notifications owed to the configured endpoints (agent side). */
    notifications: join(dataDir, 'agent', 'notifications.sqlite'),
    temporalDb: join(dataDir, 'temporal.sqlite'),
    /** The pid of the Temporal dev server `airlock dev` runs, while it runs. */
    temporalPid: join(dataDir, 'temporal.pid'),
    /** Its output, rewritten at each start. */
    temporalLog: join(dataDir, 'temporal.log'),
  };
}
