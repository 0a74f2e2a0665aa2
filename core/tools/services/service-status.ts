import { z } from 'zod';
import { defineTool } from '../tool-module';
import { describeService, prepareServices, serviceArg, serviceAt } from './service-targets';

export const serviceStatus = defineTool({
  name: 'service_status',
  description: 'Show whether configured services or containers are running and healthy. Name one service, or leave service out to list every configured one.',
  category: 'read',
  risk: 'low',
  needs: ['services'],
  parameters: z.strictObject({ service: serviceArg.optional() }),
  targetFields: ['service'],
  editable: [],
  prepare: (host, args) => prepareServices(host.services, args.service === undefined ? [] : [args.service]),
  async execute(host, args) {
    const names = args.service === undefined ? host.services.names : [args.service];
    if (names.length === 0) return { ok: true, output: 'No services are configured.' };
    const { observed, problems } = await prepareServices(host.services, names);
    const lines = names.map((name, i) => {
      const problem = problems[i];
      const seen = serviceAt(observed, i);
      return problem !== undefined || seen === undefined ? `${name}: ${problem?.reason ?? 'not observed'}` : describeService(seen);
    });
    // One service asked for and not there is an error; in a listing, a line says so.
    const ok = args.service === undefined || problems[0] === undefined;
    return { ok, output: lines.join('\n') };
  },
});
