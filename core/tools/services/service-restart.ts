import { defineTool } from '../tool-module';
import { actionPostcondition, executeAction, prepareServices, revalidateAction, serviceArgs } from './service-targets';

export const serviceRestart = defineTool({
  name: 'service_restart',
  description:
    'Restart a configured service or container (stop, then start). If it is healthy again by the time the restart is approved, it is not restarted and you are told so.',
  category: 'service_control',
  risk: 'medium',
  needs: ['services'],
  parameters: serviceArgs,
  targetFields: ['service'],
  // The approval is for this service: a reviewer may deny, not redirect it to another.
  editable: [],
  prepare: (host, args) => prepareServices(host.services, [args.service]),
  revalidate: (_host, check) => revalidateAction('restart', check),
  execute: (host, args, before) => executeAction('restart', host, args, before),
  postcondition: (host, args, before) => actionPostcondition('restart', host, args, before),
});
