import { existsSync } from 'node:fs';
import type { DataConverter } from '@temporalio/common';
import type { AirlockConfig } from '../core/config';
import { AesGcmCodec, loadCodecKeys } from './payload-codec';
import { statePaths } from './paths';

/** Loaded by workers, clients and the workflow bundle alike: failure messages travel as payloads. */
export const failureConverterPath = require.resolve('../core/failure-converter');

/**
 * How every worker and client of this installation encodes payloads: with
 * the AES-GCM codec when codec keys are configured (or `<data>/keys/codec.yaml`
 * exists), so history on the server holds no plaintext; otherwise as JSON.
 */
export function dataConverterFor(config: AirlockConfig): DataConverter {
  const file = statePaths(config).codecKeys;
  const on = config.codec.keysFile !== undefined || existsSync(file);
  return { failureConverterPath, ...(on ? { payloadCodecs: [new AesGcmCodec(loadCodecKeys(file))] } : {}) };
}
