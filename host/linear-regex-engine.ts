import { setFlagsFromString } from 'node:v8';

/**
 * Turns on V8's linear-time regular expression engine for this process,
 * before any rule pattern is compiled: rules match model-chosen text in
 * time linear in its length (see `core/util/linear-regex.ts`). Called first
 * by every airlock entry point; harmless when called again.
 */
export function enableLinearRegexEngine(): void {
  setFlagsFromString('--enable-experimental-regexp-engine');
}
