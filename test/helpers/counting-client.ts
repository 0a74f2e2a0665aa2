import { join } from 'node:path';
import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import { AirlockClient } from '../../client/airlock-client';
import { parseConfig } from '../../core/config/config';
import type { JobHarness } from './job-harness';

/** A client on the harness's namespace whose gRPC calls are counted by method. */
export async function countingClient(h: JobHarness): Promise<{ client: AirlockClient; calls: string[] }> {
  const calls: string[] = [];
  const count: Interceptor = (options, next) => {
    calls.push(options.method_definition.path.split('/').pop() ?? '');
    return new InterceptingCall(next(options));
  };
  const config = parseConfig({ TEMPORAL_ADDRESS: h.env.address, TEMPORAL_NAMESPACE: h.env.namespace, AIRLOCK_DATA_DIR: join(h.dir, 'data') });
  const client = await AirlockClient.connect(config, { interceptors: [count] });
  calls.length = 0; // Connecting asks for the server's capabilities; only what follows counts.
  return { client, calls };
}
