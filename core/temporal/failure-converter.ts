import { DefaultFailureConverter } from '@temporalio/common';

/**
 * With the payload codec on: error messages and stack traces travel as
 * payloads, so the codec encrypts them with everything else (a failure
 * message can quote a path or a model's words). The server then stores
 * "Encoded failure" in their place. Used by the workflow bundle, the
 * workers and every client of an installation whose codec is on.
 */
export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
