import { z } from 'zod';
import { isFileState, type ObservedState, type SubjectState } from '../observed-state';
import { httpMethods, httpRequestCategory } from '../http-category';
import { defineTool } from '../tool-module';

/** The subject state at a position, when it is one. */
function subjectAt(states: readonly ObservedState[] | undefined, i: number): SubjectState | undefined {
  const state = states?.[i];
  return state !== undefined && !isFileState(state) && state.kind === 'subject' ? state : undefined;
}

const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/, 'expected an HTTP header name such as "Accept"');
const headerValue = z
  .string()
  .max(8192)
  .refine((v) => !/[\r\n\0]/.test(v), 'a header value must not contain a line break or NUL');

export const httpRequest = defineTool({
  name: 'http_request',
  description:
    'Send one HTTP request to a host the tools config allows and read the response (status, headers, body cut at a size limit). ' +
    'Redirects are followed to allowed hosts only. GET and HEAD only fetch; other methods send data out and may need approval.',
  // Listed as the wider of its two categories; each call has its own (`categoryOf`).
  category: 'external_send',
  categoryOf: (args) => httpRequestCategory(args),
  risk: 'medium',
  needs: ['http'],
  parameters: z.strictObject({
    method: z.enum(httpMethods).default('GET').describe('GET or HEAD to fetch; POST, PUT, PATCH, DELETE or OPTIONS to send.'),
    url: z.string().min(1).max(8192).describe('Absolute http:// or https:// URL; no credentials in it (use an Authorization header).'),
    headers: z
      .record(headerName, headerValue)
      .default({})
      .describe('Request headers by name. Host, Content-Length, Connection and Transfer-Encoding are set by the tool.'),
    body: z.string().max(16 * 1024 * 1024).optional().describe('Request body as text (not for GET or HEAD).'),
  }),
  targetFields: ['url'],

  async prepare(host, args) {
    const seen = await host.http.observe(args.url);
    return { observed: [seen], problems: [seen.exists ? undefined : { kind: 'refused', reason: seen.summary }] };
  },

  // Checked again now: still allowed, resolved to addresses that are still allowed. Other public
  // addresses than the reviewer saw are fine (hosts move); the engine checks each one it connects to.
  revalidate(_host, { now }) {
    const seen = subjectAt(now.observed, 0);
    if (seen === undefined || !seen.exists) return { kind: 'changed', reason: seen?.summary ?? 'where the URL leads could not be checked again' };
    return { kind: 'ok' };
  },

  execute: (host, args, before) => host.http.send(args, subjectAt(before, 0)),

  // A request leaves no trace the tool could look at: after a crash during it, the outcome is unknown, never a second send.
  postcondition: async () => ({ present: false, undetectable: true, detail: 'whether the request was sent cannot be seen from here' }),
});
