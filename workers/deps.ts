import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { OpenAI } from 'openai';
import { createActivities, type Activities } from '../activities';
import { JsonlAuditSink } from '../host/audit-log';
import { createGrantSigner, createGrantVerifier, loadGrantPublicKey, loadOrCreateGrantKeyPair } from '../host/grant-keys';
import { createSealer } from '../host/seal';
import { NonceStore } from '../host/nonce-store';
import { loadReviewerKeys } from '../host/reviewer-keys';
import { loadPolicySnapshotFrom } from '../host/rules-file';
import { Roots } from '../host/roots';
import { checkModelEndpoint, type AirlockConfig } from '../core/config';
import type { QueueRole } from '../core/task-queues';
import { statePaths } from '../host/paths';

/** The OpenAI-compatible client every model caller uses; Temporal does the retrying. */
export function createModelClient(endpoint: { baseUrl: string | undefined; apiKey: string | undefined }, timeoutMs: number): OpenAI {
  return new OpenAI({
    baseURL: endpoint.baseUrl,
    // A local OpenAI-compatible server usually needs no key; the client insists on one.
    apiKey: endpoint.apiKey ?? 'airlock-local',
    timeout: timeoutMs,
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
  if (roles.includes('agent')) checkModelEndpoint(config, 'model');
  if (roles.includes('judge')) checkModelEndpoint(config, 'judge');

  let agent;
  if (roles.includes('agent')) {
    const snapshotSettings = { roots: paths.roots, judgeModel: config.judge.model, judgeTimeoutMs: config.judge.timeoutMs };
    // Validate the rules now: an invalid file stops start-up with every problem listed.
    await loadPolicySnapshotFrom(paths.rulesFile, snapshotSettings);
    const { privateKey } = loadOrCreateGrantKeyPair(paths.grantPrivateKey, paths.grantPublicKey);
    agent = {
      openai: createModelClient(config.model, config.model.timeoutMs),
      model: config.model.name,
      loadSnapshot: () => loadPolicySnapshotFrom(paths.rulesFile, snapshotSettings),
      signer: createGrantSigner(privateKey),
      sealer: createSealer(privateKey),
      grantTtlMs: config.grants.ttlMs,
      audit: new JsonlAuditSink(paths.audit),
      reviewerKeys: config.reviewerKeysFile === undefined ? new Map() : await loadReviewerKeys(resolve(config.reviewerKeysFile)),
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
    ? { openai: createModelClient(config.judge, config.judge.timeoutMs), model: config.judge.model, timeoutMs: config.judge.timeoutMs }
    : undefined;

  return createActivities({ agent, tools, judge });
}
