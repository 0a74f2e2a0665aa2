import type { SubjectState } from '../observed-state';
import type { ToolOutcome } from '../outcome';

/** One outbound request as a tool module describes it. */
export interface HttpRequestSpec {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string | undefined;
}

/**
 * Outbound HTTP with its own confinement (host/net/): only hosts the tools
 * config lists; a host resolved once and connected to by that checked
 * address; loopback, private, link-local, CGNAT, multicast and metadata
 * addresses refused unless listed as internal; every redirect checked the
 * same way; size and time limits; credentials masked in every output.
 */
export interface HttpCapability {
  /**
   * Where a request to this URL would go: `exists` and the checked
   * addresses as `identity`, or `exists: false` and why it is refused
   * (`summary`). Sends nothing.
   */
  observe(url: string): Promise<SubjectState>;
  /**
   * Sends the request. With `pinned` (this URL's `observe` state, checked
   * right before), the first hop connects to those addresses, checked
   * again, without resolving the name anew. Throws `ToolRefusal` for a
   * refused request; a response of any status is an outcome.
   */
  send(request: HttpRequestSpec, pinned?: SubjectState): Promise<ToolOutcome>;
}
