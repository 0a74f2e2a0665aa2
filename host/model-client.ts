import { OpenAI } from 'openai';

/** The OpenAI-compatible client every model caller uses; Temporal does the retrying. */
export function createModelClient(endpoint: { baseUrl: string | undefined; apiKey: string | undefined }, timeoutMs: number): OpenAI {
  return new OpenAI({
    baseURL: endpoint.baseUrl,
    // A local OpenAI-compatible server usually needs no key; the client insists on one.
    apiKey: endpoint.apiKey ?? 'airlock-local',
    timeout: timeoutMs,
    maxRetries: 0,
  });
}
