import { createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { statePaths } from '../../host/config/paths';
import { existingLocalReviewerKey } from '../../host/keys/reviewer-key-file';
import { userInfo } from 'node:os';
import { display } from '../../core/redaction/display-text';
import type { DecideOutcome } from '../../client/airlock-client';
import { printJson, stringOption, type CommandIo, type ParsedArgs } from '../command';
import { UsageError } from '../../client/errors';
import { cliName } from '../../client/cli-name';

/** `--reviewer`, else AIRLOCK_REVIEWER, else the login name. */
export function reviewerName(args: ParsedArgs, io: CommandIo): string {
  return stringOption(args, 'reviewer') ?? io.config().reviewer ?? userInfo().username;
}

/** Prints accepted on stdout, rejected on stderr; a rejection exits non-zero. */
export function reportDecision(args: ParsedArgs, io: CommandIo, outcome: DecideOutcome): number {
  if (args.values.json === true) printJson(io, outcome);
  else if (outcome.accepted === 'queued') {
    io.out(display`sent, not yet applied: ${outcome.reason}; \`${cliName(io.env)} show ${outcome.jobId}\` tells when it is`);
  } else if (outcome.accepted) {
    const call = outcome.call !== undefined ? `: ${outcome.call.toolName} ${JSON.stringify(outcome.call.args)}` : '';
    const edited = outcome.editedFingerprint !== null ? ` (edited; new fingerprint ${outcome.editedFingerprint})` : '';
    io.out(display`accepted: request ${outcome.requestId} of job ${outcome.jobId} is ${outcome.status}${call}${edited}`);
    for (const e of outcome.edits ?? []) io.out(display`  ${e.field}: ${JSON.stringify(e.before) ?? '(unset)'} → ${JSON.stringify(e.after) ?? '(unset)'}`);
    const standing = outcome.standing;
    if (standing?.kept === true) {
      io.out(display`  stands for later calls of the same operation: standing approval ${standing.id}, ${String(standing.uses)} ${standing.uses === 1 ? 'use' : 'uses'} until ${new Date(standing.until).toISOString()} (\`${cliName(io.env)} standing revoke ${standing.id}\` ends it)`);
    } else if (standing?.kept === false) io.err(display`  not standing: ${standing.reason}`);
  } else io.err(display`rejected (${outcome.code}): ${outcome.reason}`);
  // A queued decision is delivered: it is not an error.
  return outcome.accepted === false ? 1 : 0;
}

/**
 * The key, or where one was looked for and the exact fix: decisions under a
 * signing rule are refused before they are sent without one.
 */
export function signing(args: ParsedArgs, io: CommandIo): { readonly key: KeyObject } | { readonly key: undefined; readonly advice: string } {
  const key = loadSigningKey(args, io);
  if (key !== undefined) return { key };
  const name = reviewerName(args, io);
  const paths = statePaths(io.config());
  return {
    key: undefined,
    advice:
      `looked for --sign, AIRLOCK_REVIEWER_KEY and ${join(paths.reviewerKeyDir, `${name}.pem`)}. ` +
      `Make one with \`npx airlock reviewer add ${name}\` with the AIRLOCK_DATA_DIR the agent workers use (it writes the private key there and the public key into ${paths.reviewerKeys}, which the workers read), or pass --sign KEYFILE`,
  };
}

/**
 * The reviewer's Ed25519 private key: `--sign KEYFILE`, else
 * AIRLOCK_REVIEWER_KEY, else this machine's key for the reviewer (created by
 * `airlock dev` or `airlock reviewer add`). None means an unsigned decision,
 * which rules that require a signature (the built-in ones do) reject.
 */
function loadSigningKey(args: ParsedArgs, io: CommandIo): KeyObject | undefined {
  const file = stringOption(args, 'sign') ?? io.config().reviewerKeyFile ?? existingLocalReviewerKey(statePaths(io.config()), reviewerName(args, io));
  if (file === undefined) return undefined;
  try {
    const key = createPrivateKey(readFileSync(file));
    if (key.asymmetricKeyType !== 'ed25519') throw new Error('not an Ed25519 key');
    return key;
  } catch (err) {
    throw new UsageError(`--sign: ${file} is not a readable Ed25519 private key (${(err as Error).message.split('\n')[0]})`);
  }
}
