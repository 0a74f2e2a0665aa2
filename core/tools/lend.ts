import type { Capability, HostFor, ToolHost } from './tool-host';
import type { AnyTool } from './tool-module';

export type Lent = { readonly ok: true; readonly host: HostFor<Capability> } | { readonly ok: false; readonly missing: readonly Capability[] };

/**
 * The host a module's hooks get, once every capability it needs is there;
 * otherwise what is missing (the tool is not configured on this worker).
 */
export function lendHost(tool: AnyTool, host: ToolHost): Lent {
  const missing = tool.needs.filter((need) => host[need] === undefined);
  if (missing.length > 0) return { ok: false, missing };
  // A module reads only the capabilities in its `needs`, all present here; the registry's erased type names every one.
  return { ok: true, host: host as HostFor<Capability> };
}
