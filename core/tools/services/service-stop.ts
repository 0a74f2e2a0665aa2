import { defineTool } from '../tool-module';
import { actionPostcondition, executeAction, prepareServices, revalidateAction, serviceArgs } from './service-targets';

export const serviceStop = defineTool({
  name: 'service_stop',
  description: 'Stop a configured service or container. If it is already stopped when the stop is approved, nothing is done and you are told so.',
  category: 'service_control',
  risk: 'high',
  needs: ['services'],
  parameters: serviceArgs,
  targetFields: ['service'],
  editable: [],
  prepare: (host, args) => prepareServices(host.services, [args.service]),
  revalidate: (_host, check) => revalidateAction('stop', check),
  execute: (host, args, before) => executeAction('stop', host, args, before),
  postcondition: (host, args, before) => actionPostcondition('stop', host, args, before),
});
