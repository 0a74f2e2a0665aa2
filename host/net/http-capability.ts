import { z } from 'zod';
import type { SubjectState } from '../../core/tools/observed-state';
import type { HttpCapability } from '../../core/tools/capabilities/http';
import { httpMethods } from '../../core/tools/http-category';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import type { HostsConfig } from '../../core/config/tools/hosts';
import { HttpEngine, type HttpEngineOptions } from './http-engine';
import { formatHttpResult } from './http-exchange';
import { HttpFailed, HttpRefused, type PinnedAnswers } from './http-request';

/** What `observe` records of a URL's host, read back from a state carried since. */
const pinnedFacts = z.object({ host: z.string(), addresses: z.string() });

/** The URL without its query and fragment: what the reviewer reads as the subject (the query may hold a secret). */
function subjectOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return url.slice(0, 200);
  }
}

function pinnedFrom(state: SubjectState | undefined): PinnedAnswers | undefined {
  if (state === undefined || !state.exists) return undefined;
  const facts = pinnedFacts.safeParse(state.facts);
  if (!facts.success || facts.data.addresses === '') return undefined;
  return { hostname: facts.data.host, addresses: facts.data.addresses.split(' ') };
}

/** The `http` capability the tools worker lends `http_request`, on an engine built from the tools config's `hosts`. */
export function createHttpCapability(engine: HttpEngine): HttpCapability {
  return {
    async observe(url): Promise<SubjectState> {
      const subject = subjectOf(url);
      try {
        const target = await engine.resolve(url);
        const where = target.addresses.join(', ');
        return {
          kind: 'subject',
          subject,
          exists: true,
          identity: target.addresses.join(' '),
          summary: `${target.hostname} resolves to ${where}; the request goes to ${target.addresses[0] ?? where} port ${target.port}${target.tls ? ' over TLS' : ''}`,
          facts: { host: target.hostname, port: target.port, tls: target.tls, addresses: target.addresses.join(' ') },
        };
      } catch (err) {
        if (err instanceof HttpRefused || err instanceof HttpFailed) {
          return { kind: 'subject', subject, exists: false, identity: null, summary: err.message, facts: {} };
        }
        throw err;
      }
    },

    async send(request, pinned) {
      const method = z.enum(httpMethods).safeParse(request.method.toUpperCase());
      if (!method.success) throw new ToolRefusal(`method ${request.method} is not offered (${httpMethods.join(', ')})`);
      try {
        const result = await engine.send({ method: method.data, url: request.url, headers: request.headers, ...(request.body === undefined ? {} : { body: request.body }) }, pinnedFrom(pinned));
        // A response of any status is what the model asked for; the status line says how it went.
        return { ok: true, output: formatHttpResult(result) };
      } catch (err) {
        if (err instanceof HttpFailed) return { ok: false, output: `Error: ${err.message}` };
        throw err;
      }
    },
  };
}

/** The capability for a tools config's `hosts` section (the system resolver unless given another). */
export function httpCapabilityFor(hosts: HostsConfig, options: Omit<HttpEngineOptions, 'hosts'> = {}): HttpCapability {
  return createHttpCapability(new HttpEngine({ hosts, ...options }));
}
