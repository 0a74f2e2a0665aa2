import { networkInterfaces } from 'node:os';
import { existsSync } from 'node:fs';
import type { AirlockConfig } from '../../core/config/config';
import { ConfigError } from '../../core/util/errors';
import { statePaths } from '../config/paths';

/**
 * Whether the Temporal server is on this machine: its address is a
 * loopback name or address, or an address of one of this machine's
 * interfaces. A name other than `localhost` counts as another machine
 * (it may resolve anywhere).
 */
export function temporalIsLocal(address: string): boolean {
  const colon = address.lastIndexOf(':');
  const host = (colon > 0 ? address.slice(0, colon) : address).replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return true;
  return Object.values(networkInterfaces()).some((list) => (list ?? []).some((i) => i.address.toLowerCase() === host));
}

/** Whether payloads are encrypted with this configuration (keys configured, or the data folder's default keys file exists). */
export function codecOn(config: AirlockConfig): boolean {
  return config.codec.keysFile !== undefined || existsSync(statePaths(config).codecKeys);
}

/**
 * Workers write goals, paths, file contents and command output into the
 * server's history: to a server on another machine only encrypted, unless
 * the operator says plain text is fine there (`AIRLOCK_CODEC=off`).
 * Stops the worker at start, in one line saying what to do.
 */
export function requireCodecForRemoteTemporal(config: AirlockConfig, address = config.temporal.address): void {
  if (config.codec.mode === 'off' || codecOn(config) || temporalIsLocal(address)) return;
  throw new ConfigError([
    {
      variable: 'AIRLOCK_CODEC',
      message:
        `TEMPORAL_ADDRESS ${address} is another machine, and without payload encryption every goal, path and file read would sit in plain text in its history; ` +
        `run \`airlock setup\` (it creates ${statePaths(config).codecKeys}) and copy that file to every machine running airlock (or point AIRLOCK_CODEC_KEYS at it), ` +
        'or set AIRLOCK_CODEC=off to accept plain text',
    },
  ]);
}
