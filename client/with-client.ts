import { AirlockClient } from './airlock-client';
import type { CommandIo } from './command';

/** Connects with the environment's configuration, runs `fn`, always closes. */
export async function withClient<T>(io: CommandIo, fn: (client: AirlockClient) => Promise<T>): Promise<T> {
  const client = await AirlockClient.connect(io.config());
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}
