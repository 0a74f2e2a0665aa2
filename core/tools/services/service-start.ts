import { defineTool } from '../tool-module';
import { actionPostcondition, executeAction, prepareServices, revalidateAction, serviceArgs } from './service-targets';

export const serviceStart = defineTool({
  name: 'service_start',
  description: 'Start a configured service or container that is stopped. If it is already running when the start is approved, nothing is done and you are told so.',
  category: 'service_control',
  risk: 'medium',
  needs: ['services'],
  parameters: serviceArgs,
  targetFields: ['service'],
  editable: [],
  prepare: (host, args) => prepareServices(host.services, [args.service]),
  revalidate: (_host, check) => revalidateAction('start', check),
  execute: (host, args, before) => executeAction('start', host, args, before),
  postcondition: (host, args, before) => actionPostcondition('start', host, args, before),
});
