import { readFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as ProtobufLight from 'protobufjs/light';

/**
 * A smaller protobuf tree for the CLI's short commands.
 *
 * `@temporalio/proto` builds the reflection tree of the whole Temporal API
 * when it loads, from a 1.4 MB pretty-printed module, and a third of that
 * tree is Temporal Cloud's operations API, which no Temporal client or
 * worker uses (`temporal.api.cloud`; nothing in the SDK's client, common or
 * worker packages refers to it). The build writes the same tree without
 * it, compact (`npm run build`, scripts/build-proto-tree.ts); the CLI loads
 * that in its place when `@temporalio/proto` asks for its tree (a command
 * that never talks to Temporal loads neither). Only for the version of
 * `@temporalio/proto` it was made from: after an upgrade without a rebuild
 * the package's own tree loads, as it would anyway.
 */

export const PROTO_TREE_SCHEMA_VERSION = 1;
/** Left out of the tree: every name below them. */
export const LEFT_OUT = ['temporal.api.cloud'] as const;

/** On the stand-in module: `unread` until its exports are first read, then which tree they are (for tests and reports). */
export const PROTO_TREE_STATE = Symbol.for('airlock.proto-tree');
export type ProtoTreeState = 'unread' | 'smaller' | 'package';

/** The tree file, beside this module in dist/. */
export const protoTreeFile = (): string => join(__dirname, 'proto-tree.json');

/** The module `@temporalio/proto` loads its tree from (in its `protos/` folder, beside its package.json's folder). */
function treeModule(): string {
  return join(dirname(require.resolve('@temporalio/proto')), 'json-module.js');
}

export interface ProtoTreeFile {
  readonly schemaVersion: typeof PROTO_TREE_SCHEMA_VERSION;
  /** The `@temporalio/proto` version the tree was made from. */
  readonly protoVersion: string;
  readonly leftOut: readonly string[];
  readonly nested: NestedTree;
}

type NestedTree = NonNullable<ProtobufLight.INamespace['nested']>;

/** Shallow: the namespaces' contents are checked by protobufjs as it adds them. */
function isNestedTree(value: unknown): value is NestedTree {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === 'object' && v !== null);
}

export function installedProtoVersion(): string {
  const manifest: unknown = JSON.parse(readFileSync(join(dirname(treeModule()), '..', 'package.json'), 'utf8'));
  const version: unknown = typeof manifest === 'object' && manifest !== null ? Reflect.get(manifest, 'version') : undefined;
  return typeof version === 'string' ? version : 'unknown';
}

/**
 * The header read as it must be; the tree itself protobufjs checks as it
 * adds it. Read without zod: this module loads before the CLI does, for
 * `--help` too, and zod would add its own start to every command.
 */
function parseTreeFile(text: string): ProtoTreeFile | undefined {
  const file: unknown = JSON.parse(text);
  if (typeof file !== 'object' || file === null) return undefined;
  const schemaVersion: unknown = Reflect.get(file, 'schemaVersion');
  const protoVersion: unknown = Reflect.get(file, 'protoVersion');
  const leftOut: unknown = Reflect.get(file, 'leftOut');
  const nested: unknown = Reflect.get(file, 'nested');
  if (schemaVersion !== PROTO_TREE_SCHEMA_VERSION || typeof protoVersion !== 'string') return undefined;
  if (!Array.isArray(leftOut) || !leftOut.every((n): n is string => typeof n === 'string')) return undefined;
  if (!isNestedTree(nested)) return undefined;
  return { schemaVersion, protoVersion, leftOut, nested };
}

function isProtobufLight(value: unknown): value is typeof ProtobufLight {
  return typeof value === 'object' && value !== null && typeof Reflect.get(value, 'Root') === 'function' && typeof Reflect.get(value, 'roots') === 'object';
}

/** The smaller tree as `@temporalio/proto`'s module would export it, or undefined when it cannot be used here. */
function loadTree(target: string, file: string): ProtobufLight.Root | undefined {
  // The protobufjs `@temporalio/proto` itself would load: its named roots are what the SDK's code looks in.
  const protobuf: unknown = createRequire(target)('protobufjs/light');
  if (!isProtobufLight(protobuf) || protobuf.roots.__temporal !== undefined) return undefined;
  const tree = parseTreeFile(readFileSync(file, 'utf8'));
  if (tree === undefined || tree.protoVersion !== installedProtoVersion()) return undefined;
  // As the generated module does: the named root, filled.
  const root = new protobuf.Root();
  protobuf.roots.__temporal = root;
  try {
    root.addJSON(tree.nested);
    return root;
  } catch (err) {
    Reflect.deleteProperty(protobuf.roots, '__temporal');
    throw err;
  }
}

/**
 * From now on, `@temporalio/proto` gets the smaller tree when it first asks
 * for its own: its module's place in the require cache is taken by one
 * whose exports are made on first read. Where the smaller tree cannot be
 * used (no tree file, made for another version, a tree already loaded, any
 * error) the package's own module loads in its place, as without this.
 * Returns whether it is in place.
 */
export function useProtoTree(file = protoTreeFile()): boolean {
  let target: string;
  try {
    target = treeModule();
  } catch {
    return false;
  }
  if (require.cache[target] !== undefined) return false;
  const standIn = new Module(target);
  standIn.filename = target;
  standIn.loaded = true;
  let exported: unknown;
  let state: ProtoTreeState = 'unread';
  Object.defineProperty(standIn, PROTO_TREE_STATE, { get: () => state });
  Object.defineProperty(standIn, 'exports', {
    configurable: true,
    enumerable: true,
    get(): unknown {
      if (exported !== undefined) return exported;
      let root: ProtobufLight.Root | undefined;
      try {
        root = loadTree(target, file);
      } catch {
        root = undefined;
      }
      if (root === undefined) {
        // The package's own module, loaded as Node would have.
        Reflect.deleteProperty(require.cache, target);
        state = 'package';
        exported = createRequire(target)(target);
      } else {
        state = 'smaller';
        exported = root;
      }
      return exported;
    },
    set(value: unknown) {
      exported = value;
    },
  });
  require.cache[target] = standIn;
  return true;
}
