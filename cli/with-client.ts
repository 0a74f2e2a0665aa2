import type { AirlockClient } from '../client/airlock-client';
import type { CommandIo } from './command';

/** Connects with the environment's configuration, runs `fn`, always closes. */
export async function withClient<T>(io: CommandIo, fn: (client: AirlockClient) => Promise<T>): Promise<T> {
  const config = io.config();
  // Loaded when a command first talks to Temporal: checking its arguments needs none of the client.
  const { AirlockClient } = await import('../client/airlock-client');
  const client = await AirlockClient.connect(config);
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}
