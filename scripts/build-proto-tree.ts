import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as protobuf from 'protobufjs/light';
import { installedProtoVersion, LEFT_OUT, PROTO_TREE_SCHEMA_VERSION, protoTreeFile, type ProtoTreeFile } from '../cli/startup/proto-tree';

/**
 * Writes the CLI's protobuf tree (cli/startup/proto-tree.ts): the installed
 * `@temporalio/proto` tree without what it leaves out, compact. Fails the
 * build when what is left refers to anything left out.
 */
function main(): void {
  // The package's tree as it generated it, before its namespaces are flattened for the generated types.
  const generated: unknown = createRequire(__filename)('@temporalio/proto/protos/json-module');
  if (!(generated instanceof protobuf.Root)) throw new Error('@temporalio/proto/protos/json-module is not a protobufjs Root');
  for (const name of LEFT_OUT) {
    const left = generated.lookup(name);
    if (left === null || left.parent === null) throw new Error(`${name} is not in @temporalio/proto's tree: update LEFT_OUT in cli/startup/proto-tree.ts`);
    left.parent.remove(left);
  }
  const nested = generated.toJSON({ keepComments: false }).nested ?? {};
  // Every reference left must resolve: a type that pointed into what was left out fails here, not in a reviewer's CLI.
  new protobuf.Root().addJSON(nested).resolveAll();
  const file: ProtoTreeFile = { schemaVersion: PROTO_TREE_SCHEMA_VERSION, protoVersion: installedProtoVersion(), leftOut: [...LEFT_OUT], nested };
  const text = JSON.stringify(file);
  writeFileSync(protoTreeFile(), text);
  process.stdout.write(`cli protobuf tree: ${protoTreeFile()} (${Math.round(text.length / 1024)} KiB, without ${LEFT_OUT.join(', ')})\n`);
}

try {
  main();
} catch (err: unknown) {
  process.stderr.write(`building the CLI's protobuf tree failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
