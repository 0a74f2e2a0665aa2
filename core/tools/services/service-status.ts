import { z } from 'zod';
import { defineTool } from '../tool-module';
import { ToolRefusal } from '../tool-refusal';
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
    // One service asked for and not there: refused, saying what is configured.
    const only = problems[0];
    if (args.service !== undefined && only !== undefined) throw new ToolRefusal(only.reason);
    const lines = names.map((name, i) => {
      const problem = problems[i];
      const seen = serviceAt(observed, i);
      return problem !== undefined || seen === undefined ? `${name}: ${problem?.reason ?? 'not observed'}` : describeService(seen);
    });
    return { ok: true, output: lines.join('\n') };
  },
});
