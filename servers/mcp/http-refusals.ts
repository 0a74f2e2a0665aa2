import type { McpRefusalReason } from '../../core/audit/events';

/** Why a request to `airlock mcp --listen` is refused before any job sees it. */
export type Refusal =
  | { readonly kind: 'wrong_host'; readonly host: string }
  | { readonly kind: 'foreign_origin'; readonly origin: string }
  | { readonly kind: 'no_token' }
  | { readonly kind: 'unknown_token' }
  | { readonly kind: 'revoked_token'; readonly agent: string; readonly revokedAt: string };

export interface RefusalResponse {
  readonly status: number;
  /** One line: what was wrong and what to do. */
  readonly message: string;
  readonly headers: Readonly<Record<string, string>>;
}

const cut = (text: string) => JSON.stringify(text.slice(0, 200));

/** The answer to a refused request: a status, one line, and for a token problem the `WWW-Authenticate` challenge. */
export function refusalResponse(refusal: Refusal, context: { readonly allowedHosts: ReadonlySet<string> }): RefusalResponse {
  const challenge = (error?: string, description?: string) => ({
    'WWW-Authenticate': error === undefined ? 'Bearer realm="airlock"' : `Bearer realm="airlock", error="${error}", error_description="${description ?? ''}"`,
  });
  switch (refusal.kind) {
    case 'wrong_host':
      return {
        status: 421,
        message: `this server answers only for ${[...context.allowedHosts].join(' or ')}, not for host ${cut(refusal.host)}; to use another name, start airlock mcp with --allow-host NAME`,
        headers: {},
      };
    case 'foreign_origin':
      return {
        status: 403,
        message: `requests from web pages of ${cut(refusal.origin)} are refused (a page in a browser must not reach your tools); to allow that origin, start airlock mcp with --allow-origin ORIGIN`,
        headers: {},
      };
    case 'no_token':
      return {
        status: 401,
        message: 'no bearer token: create one with `airlock agent add NAME` and send it as Authorization: Bearer <token>',
        headers: challenge(),
      };
    case 'unknown_token':
      return {
        status: 401,
        message: 'this bearer token is not known here: create one with `airlock agent add NAME` (on a machine sharing this data folder or database) and send it as Authorization: Bearer <token>',
        headers: challenge('invalid_token', 'unknown token'),
      };
    case 'revoked_token':
      return {
        status: 401,
        message: `this bearer token of agent ${refusal.agent} was revoked at ${refusal.revokedAt}: make a new one with \`airlock agent add ${refusal.agent}\``,
        headers: challenge('invalid_token', 'revoked token'),
      };
  }
}

/** What the audit log records of a refusal: the reason, who asked, what was refused; never a token. */
export function refusalAudit(refusal: Refusal, remoteAddress: string): { reason: McpRefusalReason; remoteAddress: string; agent?: string; host?: string; origin?: string } {
  switch (refusal.kind) {
    case 'wrong_host':
      return { reason: refusal.kind, remoteAddress, host: refusal.host.slice(0, 200) };
    case 'foreign_origin':
      return { reason: refusal.kind, remoteAddress, origin: refusal.origin.slice(0, 200) };
    case 'revoked_token':
      return { reason: refusal.kind, remoteAddress, agent: refusal.agent };
    case 'no_token':
    case 'unknown_token':
      return { reason: refusal.kind, remoteAddress };
  }
}
