import type { AirlockConfig } from '../../core/config/config';
import { describeError } from '../../core/temporal/describe-error';
import { temporalUnreachable } from '../../host/temporal/describe-other-error';
import { AirlockClient } from '../../client/airlock-client';

/** Temporal could not be reached: the page says so and the server keeps running. */
export class TemporalUnavailable extends Error {
  override name = 'TemporalUnavailable';
}

/**
 * The inbox's one client, connected on first use and again after a
 * failed connection: the server starts (and keeps serving) while
 * Temporal is down.
 */
export class TemporalLink {
  private client: Promise<AirlockClient> | undefined;

  constructor(private readonly config: AirlockConfig) {}

  get address(): string {
    return this.config.temporal.address;
  }

  async use<T>(fn: (client: AirlockClient) => Promise<T>): Promise<T> {
    const pending = (this.client ??= AirlockClient.connect(this.config));
    let client: AirlockClient;
    try {
      client = await pending;
    } catch (err) {
      if (this.client === pending) this.client = undefined;
      throw this.unavailable(err);
    }
    try {
      return await fn(client);
    } catch (err) {
      if (temporalUnreachable(err, { deadlineExceeded: true })) throw this.unavailable(err);
      throw err;
    }
  }

  private unavailable(err: unknown): TemporalUnavailable {
    return new TemporalUnavailable(`Temporal at ${this.address} cannot be reached (${describeError(err)}); the page tries again on its next refresh`);
  }

  async close(): Promise<void> {
    const pending = this.client;
    this.client = undefined;
    if (pending !== undefined) await pending.then((c) => c.close()).catch(() => undefined);
  }
}
