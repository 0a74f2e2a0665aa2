import type { CommandCapability } from './capabilities/commands';
import type { FileCapability } from './capabilities/files';
import type { HttpCapability } from './capabilities/http';
import type { JournalCapability } from './capabilities/journal';
import type { ServiceCapability } from './capabilities/services';
import type { UpstreamCapability } from './capabilities/upstream';
import type { HoldSlot } from './undo';

/**
 * What the tools worker lends a tool module: one capability per kind of
 * resource, present only when the tools config grants it. Declared here,
 * in pure code, so a tool module (core/tools/…) is one file that the
 * workflow bundle can load for its definition; implemented in host/.
 */
export interface ToolHost {
  readonly files?: FileCapability;
  readonly services?: ServiceCapability;
  readonly http?: HttpCapability;
  readonly commands?: CommandCapability;
  /** The tools config's MCP servers; an upstream tool is offered only when its server listed it. */
  readonly upstream?: UpstreamCapability;
  /** Only inside `execute`: scoped to the call being run. */
  readonly journal?: JournalCapability;
  /** Only inside `execute`: where this call keeps what a reversible change replaces. */
  readonly hold?: HoldSlot;
  /** Only inside `execute`: the upstream tool's definition digest the call's grant binds (the one the job's rules judged). */
  readonly definition?: string;
}

/** A capability a tool needs; a tool whose needs are not all configured is not offered. */
export type Capability = Exclude<keyof ToolHost, 'journal' | 'hold' | 'upstream' | 'definition'>;
export const capabilities: readonly Capability[] = ['files', 'services', 'http', 'commands'];

/** Which capabilities the tools config grants; `files` is always there (the roots default to a sandbox folder). */
export type Availability = Readonly<Record<Capability, boolean>>;

/** A host with exactly the capabilities `needs` lists, checked: what a module's hooks receive. */
export type HostFor<N extends Capability> = ToolHost & { readonly [K in N]-?: NonNullable<ToolHost[K]> };
