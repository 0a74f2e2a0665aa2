import { DefaultFailureConverter } from '@temporalio/common';

/**
 * Error messages and stack traces travel as payloads, so the payload codec
 * (when one is configured) encrypts them with everything else: a failure
 * message can quote a path or a model's words. Used by the workflow bundle,
 * the workers and every client.
 */
export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
