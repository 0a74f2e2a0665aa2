import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { SystemdServiceConfig } from '../../core/config/tools/services';
import type { ServiceHealth, ServiceIdentity, ServiceObservation } from '../../core/tools/service-state';
import { describeIdentityChange, sameIdentity } from '../../core/tools/service-state';
import { errnoCode, messageOf } from '../fs/descriptors';
import { ServiceError, ServiceIdentityChanged, ServiceMissing, type ServiceAdapter } from './adapter';

/**
 * A systemd unit through `systemctl`, run with an argv (never a shell) and
 * only for units in the allowlist. The unit is named by its unit file and
 * the file's content: an approval does not carry over to a unit whose
 * definition changed.
 */

const SYSTEMCTL_CANDIDATES = ['/usr/bin/systemctl', '/bin/systemctl'];
const SHOWN = ['Id', 'LoadState', 'ActiveState', 'SubState', 'MainPID', 'FragmentPath', 'DropInPaths', 'InvocationID'] as const;
const MAX_OUTPUT_BYTES = 256 * 1024;

export interface SystemdAdapterOptions {
  /** The systemctl binary; default: the service's `systemctl`, else /usr/bin/systemctl. */
  readonly systemctl?: string;
  /** Every unit any systemd service may name: checked again before each run. */
  readonly allowedUnits: ReadonlySet<string>;
}

function defaultSystemctl(): string {
  for (const candidate of SYSTEMCTL_CANDIDATES) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Try the next place.
    }
  }
  return SYSTEMCTL_CANDIDATES[0]!;
}

/** `systemctl show` output: one `Key=Value` per line. */
export function parseShow(text: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) values.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return values;
}

function healthOf(active: string): ServiceHealth {
  switch (active) {
    case 'active':
      return 'healthy';
    case 'activating':
    case 'reloading':
    case 'refreshing':
      return 'starting';
    case 'inactive':
      return 'stopped';
    default:
      // failed, deactivating, maintenance, and states newer systemd versions add.
      return 'unhealthy';
  }
}

export class SystemdAdapter implements ServiceAdapter {
  readonly kind = 'systemd';
  readonly target: string;
  private readonly systemctl: string;
  private readonly allowedUnits: ReadonlySet<string>;

  constructor(
    readonly service: string,
    private readonly config: SystemdServiceConfig,
    options: SystemdAdapterOptions,
  ) {
    this.target = `unit ${config.unit}`;
    this.allowedUnits = options.allowedUnits;
    this.systemctl = options.systemctl ?? config.systemctl ?? defaultSystemctl();
    this.allowed();
  }

  /** The allowlist, checked where systemctl is called, not only where the call was decided. */
  private allowed(): string {
    if (!this.allowedUnits.has(this.config.unit)) {
      throw new ServiceError(this.service, `unit ${this.config.unit} is not in the allowlist of units (${[...this.allowedUnits].join(', ') || 'none'})`);
    }
    return this.config.unit;
  }

  private run(args: readonly string[]): Promise<string> {
    return new Promise((resolve, reject) => {
      execFile(
        this.systemctl,
        args,
        { timeout: this.config.timeoutMs, killSignal: 'SIGKILL', maxBuffer: MAX_OUTPUT_BYTES, env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C', SYSTEMD_PAGER: '', SYSTEMD_COLORS: '0' } },
        (err, stdout, stderr) => {
          if (err === null) {
            resolve(stdout);
            return;
          }
          const shown = `${this.systemctl} ${args.join(' ')}`;
          if (errnoCode(err) === 'ENOENT') reject(new ServiceError(this.service, `${this.systemctl} does not exist (set systemctl in the service's config)`));
          else if (errnoCode(err) === 'EACCES') reject(new ServiceError(this.service, `${this.systemctl} is not executable by the tools worker`));
          else if (err.killed) reject(new ServiceError(this.service, `${shown} did not finish within ${this.config.timeoutMs} ms and was killed`));
          else {
            const said = stderr.trim().split('\n').slice(0, 3).join(' ').slice(0, 500);
            reject(new ServiceError(this.service, `${shown} failed (exit code ${String(err.code)})${said === '' ? '' : `: ${said}`}`));
          }
        },
      );
    });
  }

  /** The unit file and its drop-ins, path and content each: the unit's definition as one digest. */
  private async digest(paths: readonly string[]): Promise<string> {
    const hash = createHash('sha256');
    for (const path of paths) {
      let content: Buffer;
      try {
        content = await readFile(path);
      } catch (err) {
        throw new ServiceError(this.service, `cannot read the unit file ${path}: ${messageOf(err)}`);
      }
      hash.update(path).update('\0').update(String(content.length)).update('\0').update(content);
    }
    return hash.digest('hex');
  }

  async status(): Promise<ServiceObservation> {
    const unit = this.allowed();
    const shown = parseShow(await this.run(['show', `--property=${SHOWN.join(',')}`, '--', unit]));
    const load = shown.get('LoadState') ?? '';
    const fragment = shown.get('FragmentPath') ?? '';
    if (load === 'not-found' || fragment === '') {
      throw new ServiceMissing(this.service, `systemd knows no unit ${unit} (LoadState=${load || 'unknown'})`);
    }
    const dropIns = (shown.get('DropInPaths') ?? '').split(' ').filter((p) => p !== '');
    const identity: ServiceIdentity = { adapter: 'systemd', unit, fragmentPath: fragment, sha256: await this.digest([fragment, ...dropIns]) };
    const active = shown.get('ActiveState') ?? 'unknown';
    const sub = shown.get('SubState') ?? 'unknown';
    const health = healthOf(active);
    const mainPid = shown.get('MainPID') ?? '0';
    const invocation = shown.get('InvocationID') ?? '';
    return {
      schemaVersion: 1,
      service: this.service,
      adapter: 'systemd',
      identity,
      health,
      instance: health === 'stopped' || invocation === '' ? null : invocation,
      detail: `${active} (${sub})${mainPid !== '0' ? `, main pid ${mainPid}` : ''}; unit file ${fragment}`,
    };
  }

  /** Checks the definition right before acting; systemctl itself cannot be pinned to a file's content. */
  private async act(pinned: ServiceIdentity | null, verb: 'start' | 'stop' | 'restart'): Promise<ServiceObservation> {
    const unit = this.allowed();
    const now = await this.status();
    if (pinned === null || !sameIdentity(pinned, now.identity)) throw new ServiceIdentityChanged(this.service, describeIdentityChange(pinned, now.identity));
    await this.run(['--no-ask-password', verb, '--', unit]);
    return this.status();
  }

  start(pinned: ServiceIdentity | null): Promise<ServiceObservation> {
    return this.act(pinned, 'start');
  }

  stop(pinned: ServiceIdentity | null): Promise<ServiceObservation> {
    return this.act(pinned, 'stop');
  }

  restart(pinned: ServiceIdentity | null): Promise<ServiceObservation> {
    return this.act(pinned, 'restart');
  }
}
