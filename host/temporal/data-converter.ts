import type { DataConverter } from '@temporalio/common';
import type { AirlockConfig } from '../../core/config/config';
import type { AesGcmCodec, loadCodecKeys } from './payload-codec';
import { statePaths } from '../config/paths';
import { codecOn } from './locality';

/** Loaded by workers and clients with the codec on: failure messages travel as payloads, encrypted. */
export const encodedFailureConverterPath = require.resolve('../../core/temporal/failure-converter');
/** Loaded with the codec off: failure messages stay where the Web UI reads them. */
export const plainFailureConverterPath = require.resolve('../../core/temporal/plain-failure-converter');

/** Required only when the codec is on: without keys, a CLI command does without its YAML and zod parsing. */
function payloadCodec(): { AesGcmCodec: typeof AesGcmCodec; loadCodecKeys: typeof loadCodecKeys } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a static import would load it for every client
  return require('./payload-codec') as { AesGcmCodec: typeof AesGcmCodec; loadCodecKeys: typeof loadCodecKeys };
}

/**
 * How every worker and client of this installation encodes payloads: with
 * the AES-GCM codec when codec keys are configured (or `<data>/keys/codec.yaml`
 * exists), so history on the server holds no plaintext, failure messages
 * included; otherwise as JSON, failure messages in their own fields.
 */
export function dataConverterFor(config: AirlockConfig): DataConverter {
  const file = statePaths(config).codecKeys;
  if (!codecOn(config)) return { failureConverterPath: plainFailureConverterPath };
  const codec = payloadCodec();
  return { failureConverterPath: encodedFailureConverterPath, payloadCodecs: [new codec.AesGcmCodec(codec.loadCodecKeys(file))] };
}
