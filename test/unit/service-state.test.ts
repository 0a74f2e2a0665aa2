import { servicesConfigSchema } from '../../core/config/tools/services';
import { recheckServiceAction, serviceActionDone, type ServiceIdentity, type ServiceObservation } from '../../core/tools/service-state';

const proc = (pid: number, startTicks = '100'): ServiceIdentity => ({ adapter: 'process', pid, startTicks, bootId: 'b' });

function seen(health: ServiceObservation['health'], identity: ServiceIdentity | null, instance: string | null = identity === null ? null : 'i1'): ServiceObservation {
  return { schemaVersion: 1, service: 'web', adapter: 'process', identity, health, instance, detail: health };
}

describe('restart', () => {
  test('healthy again (not healthy at approval, healthy now, same process): not needed, and says why', () => {
    for (const before of ['unhealthy', 'starting'] as const) {
      expect(recheckServiceAction('restart', seen(before, proc(7)), seen('healthy', proc(7)))).toEqual({
        verdict: 'not_needed',
        reason: `web was ${before} when the restart was approved and is healthy again now (healthy); not restarted`,
      });
    }
    // A process service that was not running has no identity to keep: someone started it since, and it serves.
    expect(recheckServiceAction('restart', seen('stopped', null), seen('healthy', proc(9)))).toEqual({
      verdict: 'not_needed',
      reason: 'web was not running when the restart was approved and is running and healthy now (healthy); not restarted',
    });
  });

  test('a restart approved while healthy still runs: healthy is not "healthy again"', () => {
    expect(recheckServiceAction('restart', seen('healthy', proc(7)), seen('healthy', proc(7)))).toEqual({ verdict: 'run' });
  });

  test('still unhealthy: runs; a replaced process: refused even when healthy', () => {
    expect(recheckServiceAction('restart', seen('unhealthy', proc(7)), seen('unhealthy', proc(7)))).toEqual({ verdict: 'run' });
    expect(recheckServiceAction('restart', seen('unhealthy', proc(7)), seen('healthy', proc(8)))).toMatchObject({ verdict: 'refuse' });
    expect(recheckServiceAction('restart', seen('unhealthy', proc(7)), seen('healthy', proc(7, '101')))).toMatchObject({
      verdict: 'refuse',
      reason: 'web is not what was approved: pid 7 is another process now (its start time differs)',
    });
    expect(recheckServiceAction('restart', seen('stopped', null), seen('unhealthy', proc(9)))).toMatchObject({ verdict: 'refuse' });
    expect(recheckServiceAction('restart', seen('stopped', null), seen('stopped', null))).toEqual({ verdict: 'run' });
  });
});

test('stop: already stopped is not needed; another process is refused', () => {
  expect(recheckServiceAction('stop', seen('healthy', proc(7)), seen('stopped', null))).toMatchObject({ verdict: 'not_needed' });
  expect(recheckServiceAction('stop', seen('healthy', proc(7)), seen('healthy', proc(8)))).toMatchObject({ verdict: 'refuse' });
  expect(recheckServiceAction('stop', seen('healthy', proc(7)), seen('unhealthy', proc(7)))).toEqual({ verdict: 'run' });
});

test('start: already running is not needed', () => {
  expect(recheckServiceAction('start', seen('stopped', null), seen('unhealthy', proc(7)))).toMatchObject({ verdict: 'not_needed' });
  expect(recheckServiceAction('start', seen('stopped', null), seen('stopped', null))).toEqual({ verdict: 'run' });
});

test('an observation of another service or adapter never passes', () => {
  expect(recheckServiceAction('restart', seen('unhealthy', proc(7)), { ...seen('unhealthy', proc(7)), service: 'db' })).toMatchObject({ verdict: 'refuse' });
});

test('postconditions: a restart is done when a new instance runs', () => {
  expect(serviceActionDone('restart', seen('unhealthy', proc(7), 'i1'), seen('healthy', proc(8), 'i2'))).toBe(true);
  expect(serviceActionDone('restart', seen('unhealthy', proc(7), 'i1'), seen('unhealthy', proc(7), 'i1'))).toBe(false);
  expect(serviceActionDone('stop', seen('healthy', proc(7)), seen('stopped', null))).toBe(true);
  expect(serviceActionDone('start', seen('stopped', null), seen('starting', proc(8)))).toBe(true);
});

test('config: one clear message per mistake', () => {
  const issue = (services: unknown) => servicesConfigSchema.safeParse(services).error?.issues[0];
  const badName = issue({ Web: { adapter: 'process', command: ['/bin/true'], pidFile: '/run/w.pid' } });
  expect(badName?.code === 'invalid_key' ? badName.issues[0]?.message : badName?.message).toMatch(/expected a service name of lowercase letters/);
  expect(issue({ web: { adapter: 'process', command: ['true'], pidFile: '/run/w.pid' } })?.message).toBe('command[0] must be the absolute path of the program');
  expect(issue({ web: { adapter: 'process', command: ['/bin/true'], pidFile: 'w.pid' } })?.message).toBe('pidFile must be an absolute path');
  expect(issue({ web: { adapter: 'process', command: ['/bin/true'], pidFile: '/run/w.pid', health: { type: 'http', url: 'https://x' } } })?.message).toMatch(/url must be an http:\/\/ URL/);
  expect(issue({ web: { adapter: 'process', command: ['/bin/true'], pidFile: '/run/w.pid', shell: 'bash' } })?.message).toMatch(/shell/);
  expect(
    issue({ a: { adapter: 'process', command: ['/bin/true'], pidFile: '/run/w.pid' }, b: { adapter: 'process', command: ['/bin/false'], pidFile: '/run/w.pid' } }),
  ).toMatchObject({ path: ['b', 'pidFile'], message: 'the same pidFile as service a' });
  expect(servicesConfigSchema.parse(undefined)).toEqual({});
});
