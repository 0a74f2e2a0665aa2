import type { ToolRisk } from '../tool-module';
import { defineTool } from '../tool-module';
import { actionPostcondition, executeAction, prepareServices, revalidateAction, serviceArgs } from './service-targets';

/**
 * `service_start`, `service_stop` and `service_restart`: one configured
 * service or container, observed for the reviewer, checked again before the
 * run (a call with nothing left to do is skipped and said so), and its
 * effect looked for after a crash. They differ only in the action.
 */
function serviceAction(action: 'start' | 'stop' | 'restart', description: string, risk: ToolRisk) {
  return defineTool({
    name: `service_${action}`,
    description,
    category: 'service_control',
    risk,
    needs: ['services'],
    parameters: serviceArgs,
    targetFields: ['service'],
    // The approval is for this service: a reviewer may deny, not redirect it to another.
    editable: [],
    prepare: (host, args) => prepareServices(host.services, [args.service]),
    revalidate: (_host, check) => revalidateAction(action, check),
    execute: (host, args, before) => executeAction(action, host, args, before),
    postcondition: (host, args, before) => actionPostcondition(action, host, args, before),
  });
}

export const serviceStart = serviceAction(
  'start',
  'Start a configured service or container that is stopped. If it is already running when the start is approved, nothing is done and you are told so.',
  'medium',
);

export const serviceStop = serviceAction(
  'stop',
  'Stop a configured service or container. If it is already stopped when the stop is approved, nothing is done and you are told so.',
  'high',
);

export const serviceRestart = serviceAction(
  'restart',
  'Restart a configured service or container (stop, then start). If it is healthy again by the time the restart is approved, it is not restarted and you are told so.',
  'medium',
);
