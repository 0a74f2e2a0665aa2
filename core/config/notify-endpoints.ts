import { z } from 'zod';
import { maskString } from '../redaction/masking';
import { redactUrl } from '../redaction/redact-url';
import { sha256Hex } from '../util/sha256';

/**
 * Where notifications go (AIRLOCK_NOTIFY_URLS): `generic:URL` receives
 * airlock's own JSON body, `ntfy:URL/TOPIC` an ntfy message published as
 * JSON to the server's root. Credentials may sit in the URL (user and
 * password, or an ntfy token as the password with no user); they are sent as
 * an Authorization header and never shown.
 */
export type NotifyEndpoint =
  | { readonly kind: 'generic'; readonly id: string; readonly url: string; readonly shown: string }
  | { readonly kind: 'ntfy'; readonly id: string; readonly url: string; readonly shown: string; readonly topic: string };

export type NotifyEndpointKind = NotifyEndpoint['kind'];

/** A URL as it may be shown: user info and secret-looking query values hidden. */
export function showUrl(url: string): string {
  return maskString(redactUrl(url)).replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/@?#]*@/, '$1***@');
}

/** `generic:URL` or `ntfy:URL` entries, as written in the variable, masked. */
export function showEndpointList(raw: string): string {
  return raw
    .split(/[\s,]+/)
    .filter((item) => item !== '')
    .map((item) => {
      const colon = item.indexOf(':');
      return colon < 0 ? showUrl(item) : `${item.slice(0, colon + 1)}${showUrl(item.slice(colon + 1))}`;
    })
    .join(',');
}

const TOPIC = /^[A-Za-z0-9_-]{1,64}$/;

function parseEndpoint(item: string): NotifyEndpoint | string {
  const colon = item.indexOf(':');
  const kind = colon < 0 ? '' : item.slice(0, colon);
  const url = item.slice(colon + 1);
  if (kind !== 'generic' && kind !== 'ntfy') return `"${showEndpointList(item)}" must start with generic: or ntfy:, for example ntfy:https://ntfy.sh/my-airlock`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `"${showEndpointList(item)}" is not a URL after ${kind}:`;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `"${showEndpointList(item)}" must be an http(s) URL`;
  // The id names the endpoint in the outbox without keeping its credentials on disk.
  const id = sha256Hex(`${kind}:${url}`).slice(0, 16);
  const shown = `${kind}:${showUrl(url)}`;
  if (kind === 'generic') return { kind, id, url, shown };
  const segments = parsed.pathname.split('/').filter((s) => s !== '');
  const topic = segments[segments.length - 1] ?? '';
  if (!TOPIC.test(topic) || parsed.search !== '') {
    return `"${showEndpointList(item)}" must end in an ntfy topic (letters, digits, - and _), for example ntfy:https://ntfy.sh/my-airlock`;
  }
  return { kind, id, url, shown, topic };
}

/** AIRLOCK_NOTIFY_URLS: entries separated by commas or white space; each problem is named. */
export const notifyEndpointsSchema = z.string().transform((raw, ctx) => {
  const items = raw.split(/[\s,]+/).filter((item) => item !== '');
  const endpoints: NotifyEndpoint[] = [];
  for (const item of items) {
    const parsed = parseEndpoint(item);
    if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed });
    else if (!endpoints.some((e) => e.id === parsed.id)) endpoints.push(parsed);
  }
  return endpoints;
});

/** Basic credentials from the URL's user info (an ntfy token goes as the password with an empty user). */
export function endpointRequest(endpoint: NotifyEndpoint): { readonly url: string; readonly authorization: string | undefined } {
  const parsed = new URL(endpoint.url);
  const user = decodeURIComponent(parsed.username);
  const password = decodeURIComponent(parsed.password);
  parsed.username = '';
  parsed.password = '';
  // ntfy takes a JSON message at the server's root, the topic inside the body.
  if (endpoint.kind === 'ntfy') parsed.pathname = parsed.pathname.slice(0, parsed.pathname.length - endpoint.topic.length);
  const authorization = user === '' && password === '' ? undefined : `Basic ${base64(`${user}:${password}`)}`;
  return { url: parsed.toString(), authorization };
}

function base64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}
