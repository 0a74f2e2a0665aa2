import { mkdirSync } from 'node:fs';
import { OpenAI } from 'openai';
import { createActivities, type Activities } from '../activities';
import { JsonlAuditSink } from '../activities/audit';
import { createGrantSigner, createGrantVerifier, loadGrantPublicKey, loadOrCreateGrantKeyPair } from '../activities/grant-keys';
import { NonceStore } from '../activities/nonce-store';
import { loadPolicySnapshotFrom } from '../activities/rules-file';
import { Roots } from '../activities/tools/roots';
import { checkModelEndpoint, type AirlockConfig } from '../core/config';
import type { QueueRole } from '../core/task-queues';
import { statePaths } from './paths';

/** The OpenAI-compatible client every model caller uses; Temporal does the retrying. */
export function createModelClient(config: AirlockConfig): OpenAI {
  return new OpenAI({
    baseURL: config.model.baseUrl,
    // A local OpenAI-compatible server usually needs no key; the client insists on one.
    apiKey: config.model.apiKey ?? 'airlock-local',
    timeout: config.model.timeoutMs,
    maxRetries: 0,
  });
}

/**
 * Real dependencies for the activities of the given queues, built from
 * configuration. Everything that can be wrong with the configuration fails
 * here, at start-up, not in the middle of a job.
 */
export async function buildActivities(config: AirlockConfig, roles: readonly QueueRole[]): Promise<Activities> {
  const paths = statePaths(config);
  const needsModel = roles.includes('agent') || roles.includes('judge');
  if (needsModel) checkModelEndpoint(config);
  const openai = needsModel ? createModelClient(config) : undefined;

  let agent;
  if (roles.includes('agent')) {
    // Validate the rules now: an invalid file stops start-up with every problem listed.
    await loadPolicySnapshotFrom(paths.rulesFile);
    const { privateKey } = loadOrCreateGrantKeyPair(paths.grantPrivateKey, paths.grantPublicKey);
    agent = {
      openai: openai!,
      model: config.model.name,
      loadSnapshot: () => loadPolicySnapshotFrom(paths.rulesFile),
      signer: createGrantSigner(privateKey),
      grantTtlMs: config.grants.ttlMs,
      audit: new JsonlAuditSink(paths.audit),
    };
  }

  let tools;
  if (roles.includes('tools')) {
    if (config.roots === undefined) mkdirSync(paths.sandbox, { recursive: true });
    tools = {
      roots: await Roots.create(paths.roots),
      nonces: new NonceStore(paths.nonces),
      verifier: createGrantVerifier(loadGrantPublicKey(paths.grantPublicKey)),
    };
  }

  const judge = roles.includes('judge')
    ? { openai: openai!, model: config.model.name, timeoutMs: Math.min(config.model.timeoutMs, 10_000) }
    : undefined;

  return createActivities({ agent, tools, judge });
}
