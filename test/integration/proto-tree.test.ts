import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { repoRoot } from '../helpers/processes';

/**
 * The CLI's smaller protobuf tree (cli/startup/proto-tree.ts), in real Node
 * processes: `@temporalio/proto` loads it in place of its own, and it is its
 * own tree but for Temporal Cloud's part, field for field and byte for byte
 * on the wire; a tree file that does not fit falls back to the package's.
 */

const protoTree = join(repoRoot, 'dist', 'cli', 'startup', 'proto-tree.js');
const treeFile = join(repoRoot, 'dist', 'cli', 'startup', 'proto-tree.json');
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-proto-tree-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const report = z.object({
  installed: z.boolean(),
  cloud: z.boolean(),
  tree: z.record(z.string(), z.unknown()),
  wire: z.string(),
  decoded: z.unknown(),
});

/** In a fresh process: maybe put the smaller tree in place, load `@temporalio/proto`, and report what it has and how a listing encodes. */
function probe(use: string | undefined): z.infer<typeof report> {
  const script = join(dir, 'probe.js');
  writeFileSync(
    script,
    `const installed = ${use === undefined ? 'false' : `require(${JSON.stringify(protoTree)}).useProtoTree(${JSON.stringify(use)})`};
const proto = require(${JSON.stringify(require.resolve('@temporalio/proto'))});
const protobuf = require(${JSON.stringify(require.resolve('protobufjs/light'))});
const root = protobuf.roots.__temporal;
const tree = root.toJSON({ keepComments: false }).nested;
const cloud = tree.temporal.nested.api.nested.cloud !== undefined;
delete tree.temporal.nested.api.nested.cloud;
const { ListWorkflowExecutionsResponse } = proto.temporal.api.workflowservice.v1;
const message = ListWorkflowExecutionsResponse.fromObject({
  executions: [{
    execution: { workflowId: 'job-1', runId: 'r' },
    type: { name: 'agentJob' },
    status: 'WORKFLOW_EXECUTION_STATUS_RUNNING',
    memo: { fields: { card: { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('{"a":1}') } } },
    searchAttributes: { indexedFields: { AirlockStatus: { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"awaiting_approval"') } } },
    startTime: { seconds: 1700000000, nanos: 5 },
  }],
  nextPageToken: Buffer.from([1, 2, 3]),
});
const wire = Buffer.from(ListWorkflowExecutionsResponse.encode(message).finish()).toString('hex');
const decoded = ListWorkflowExecutionsResponse.toObject(ListWorkflowExecutionsResponse.decode(Buffer.from(wire, 'hex')), { longs: String, enums: String, bytes: String });
process.stdout.write(JSON.stringify({ installed, cloud, tree, wire, decoded }));
`,
  );
  const run = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 60_000, maxBuffer: 64 * 1024 * 1024 });
  if (run.status !== 0) throw new Error(`the probe failed (${run.status}): ${run.stderr}`);
  return report.parse(JSON.parse(run.stdout));
}

test("the smaller tree is the package's own without Temporal Cloud's part, and encodes and decodes alike", () => {
  const own = probe(undefined);
  const smaller = probe(treeFile);
  expect(own.cloud).toBe(true);
  expect(smaller).toMatchObject({ installed: true, cloud: false });
  expect(smaller.tree).toEqual(own.tree);
  expect(smaller.wire).toBe(own.wire);
  expect(smaller.decoded).toEqual(own.decoded);
  expect(smaller.decoded).toMatchObject({ executions: [{ execution: { workflowId: 'job-1' }, status: 'WORKFLOW_EXECUTION_STATUS_RUNNING' }] });
});

test("a tree made for another version of @temporalio/proto, or not a tree at all, leaves the package's own in place", () => {
  const made: unknown = JSON.parse(readFileSync(treeFile, 'utf8'));
  const other = join(dir, 'other-version.json');
  writeFileSync(other, JSON.stringify({ ...z.record(z.string(), z.unknown()).parse(made), protoVersion: '0.0.1' }));
  const broken = join(dir, 'broken.json');
  writeFileSync(broken, '{"schemaVersion": 1, "protoVersion"');
  const missing = join(dir, 'missing.json');
  const own = probe(undefined);
  for (const file of [other, broken, missing]) {
    const fellBack = probe(file);
    expect(fellBack.cloud).toBe(true);
    expect(fellBack.wire).toBe(own.wire);
  }
});
