import type { DataConverter } from '@temporalio/common';
import type { AirlockConfig } from '../core/config/config';
import type { AesGcmCodec, loadCodecKeys } from './payload-codec';
import { statePaths } from './paths';
import { codecOn } from './temporal-locality';

/** Loaded by workers, clients and the workflow bundle alike: failure messages travel as payloads. */
export const failureConverterPath = require.resolve('../core/temporal/failure-converter');

/** Required only when the codec is on: without keys, a CLI command does without its YAML and zod parsing. */
function payloadCodec(): { AesGcmCodec: typeof AesGcmCodec; loadCodecKeys: typeof loadCodecKeys } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a static import would load it for every client
  return require('./payload-codec') as { AesGcmCodec: typeof AesGcmCodec; loadCodecKeys: typeof loadCodecKeys };
}

/**
 * How every worker and client of this installation encodes payloads: with
 * the AES-GCM codec when codec keys are configured (or `<data>/keys/codec.yaml`
 * exists), so history on the server holds no plaintext; otherwise as JSON.
 */
export function dataConverterFor(config: AirlockConfig): DataConverter {
  const file = statePaths(config).codecKeys;
  if (!codecOn(config)) return { failureConverterPath };
  const codec = payloadCodec();
  return { failureConverterPath, payloadCodecs: [new codec.AesGcmCodec(codec.loadCodecKeys(file))] };
}
