import { type IncomingMessage } from 'node:http';
import { HttpFailed, type HttpResult } from './http-request';

/** An exchange's pieces outside the engine: its parts, its errors in words, a signal's abort, and the result as the model reads it. */

export interface Exchange {
  readonly message: IncomingMessage;
  readonly body: Buffer;
  readonly truncated: boolean;
}

export function errorCode(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const code = 'code' in err && typeof err.code === 'string' ? err.code : undefined;
    const message = 'message' in err && typeof err.message === 'string' ? err.message : undefined;
    return code ?? message ?? 'unknown error';
  }
  return String(err);
}

/** Why a signal aborted: the engine's own timeout error, or a plain one. */
export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new HttpFailed('the request was cancelled');
}

export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/** The result as the model reads it. Everything in it is masked already. */
export function formatHttpResult(result: HttpResult): string {
  const lines = [`HTTP ${result.status} ${result.statusText} (${result.method} ${result.url}, connected to ${result.address})`];
  for (const r of result.redirects) lines.push(`redirected (${r.status}) to ${r.url}`);
  if (result.redirectNotFollowed !== undefined) lines.push(`redirect not followed: ${result.redirectNotFollowed}`);
  for (const [name, value] of Object.entries(result.headers)) lines.push(`${name}: ${value}`);
  lines.push('', result.body);
  if (result.truncated) lines.push(`[body cut at ${result.bodyBytes} bytes (hosts.maxResponseBytes)]`);
  return lines.join('\n');
}
