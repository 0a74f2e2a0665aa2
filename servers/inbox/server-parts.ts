import { WorkflowNotFoundError } from '@temporalio/common';
import { JobError } from '../../client/errors';
import { describeError } from '../../core/temporal/describe-error';
import { ReviewerKeysError } from '../../host/keys/reviewer-keys-file';
import type { LocalTls } from '../../host/tls/local-ca';
import { HttpError } from '../http/guard';
import { TLS_CHECK_MS,localTls } from './server-tls';
import { type InboxTls } from './site';
import { TemporalUnavailable } from './temporal-link';

/**
 * The server's smaller parts: the certificate renewed in time, a path
 * piece decoded, an error as the status a browser gets.
 *
 * An inbox that runs for months outlives its certificate: check twice a day,
 * and serve a new one (same CA) to new connections once it is issued.
 */
export function renewTls(input: { tls: InboxTls; log: (line: string) => void; serve: (fresh: LocalTls) => void }): NodeJS.Timeout {
  const { log } = input;
  const timer = setInterval(() => {
    localTls(input.tls)
      .then((fresh) => {
        if (fresh.issued === undefined) return;
        input.serve(fresh);
        // Only if its files were deleted meanwhile: phones trust the old CA, not this one.
        if (fresh.issued === 'ca') log(`airlock inbox: made a new local CA, ${fresh.caFile} (SHA-256 ${fresh.caFingerprint}); trust it on your phones again`);
        log(`airlock inbox: serving a new TLS certificate, valid until ${fresh.notAfter.toISOString()}`);
      })
      .catch((err: unknown) => log(`airlock inbox: cannot renew the TLS certificate: ${describeError(err)}`));
  }, TLS_CHECK_MS);
  timer.unref();
  return timer;
}

/** A path segment as text; a malformed escape (`%zz`, a cut UTF-8 sequence) is the client's error. */
export function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new HttpError(400, `the path is not a valid percent-encoding: ${JSON.stringify(part.slice(0, 100))}`);
  }
}

export function failure(err: unknown): [number, string] {
  if (err instanceof HttpError) return [err.status, err.message];
  if (err instanceof TemporalUnavailable) return [503, err.message];
  if (err instanceof WorkflowNotFoundError) return [404, `job ${err.workflowId} is not running (it has ended, or there is no such job)`];
  if (err instanceof JobError) return [409, err.message];
  // Locked by another writer, or broken: the operator's to fix, the reviewer's to retry.
  if (err instanceof ReviewerKeysError) return [503, err.message];
  return [500, `the inbox failed: ${describeError(err)}`];
}
