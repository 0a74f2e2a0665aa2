import type { ToolCategory } from './tool-module';

/** The methods `http_request` offers. */
export const httpMethods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
export type HttpMethod = (typeof httpMethods)[number];

/**
 * An `http_request` call's category depends on its method: GET and HEAD
 * only fetch (`network`); every other method sends something out
 * (`external_send`). Policy sees the category of the call, so a rule on
 * `external_send` catches a POST and not a GET to the same URL.
 */
export function httpRequestCategory(args: { readonly method?: unknown }): Extract<ToolCategory, 'network' | 'external_send'> {
  const method = typeof args.method === 'string' ? args.method.toUpperCase() : 'GET';
  return method === 'GET' || method === 'HEAD' ? 'network' : 'external_send';
}
