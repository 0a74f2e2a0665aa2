import { z } from 'zod';
import { describeObserved } from '../../observed-state';
import { serviceNameSchema } from '../../tools-config/services';
import { defineTool } from '../tool-module';

export const serviceStatus = defineTool({
  name: 'service_status',
  description: 'Show whether a configured service or container is running and healthy.',
  category: 'read',
  risk: 'low',
  needs: ['services'],
  parameters: z.strictObject({ service: serviceNameSchema.describe('A service name from the tools config, e.g. jellyfin.') }),
  targetFields: ['service'],
  editable: [],
  prepare: async (host, args) => ({ observed: [await host.services.observe(args.service)], problems: [undefined] }),
  async execute(host, args) {
    const seen = await host.services.observe(args.service);
    if (!seen.exists) return { ok: false, output: `Refused: no service named ${args.service} is configured (configured: ${host.services.names.join(', ')})` };
    return { ok: true, output: `${args.service}: ${describeObserved(seen)}` };
  },
});
