import type { SubjectState } from '../../observed-state';
import type { ToolOutcome } from '../outcome';

/** One outbound request as a tool module describes it. */
export interface HttpRequestSpec {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
}

/**
 * Outbound HTTP with its own confinement: the host is resolved once and
 * connected to by that address, refused addresses (loopback, private,
 * link-local, metadata) stay refused unless the tools config allows them.
 */
export interface HttpCapability {
  /** Where a request would go (the resolved addresses, or why it is refused), without sending it. */
  observe(url: string): Promise<SubjectState>;
  send(request: HttpRequestSpec): Promise<ToolOutcome>;
}
