import { z } from 'zod';
import type { SubjectState } from '../observed-state';
import { ToolRefusal } from '../tool-refusal';
import { defineTool, type AnyTool } from '../tool-module';
import { boundedSchema } from './bounded-schema';
import { upstreamCategory, type UpstreamToolSpec } from './upstream-spec';

/**
 * An upstream MCP server's tool as a tool module: its arguments checked
 * against the upstream's own JSON Schema (made a zod schema, so the
 * workflow, the gate and the tools side check it alike), its category
 * from its annotations, and one target airlock cannot look at: the
 * upstream does whatever it does with the arguments. What a reviewer
 * approves is these exact arguments; nothing is re-validated but them.
 */

export const UNOBSERVABLE_UPSTREAM = 'approval is for these exact arguments; airlock cannot check the target before running';

/** The schema of anything an upstream lists that zod cannot take: arguments must still be a JSON object. */
const anyObject = z.record(z.string(), z.unknown());

function parametersOf(spec: UpstreamToolSpec): z.ZodType {
  const bounded = boundedSchema(spec.inputSchema);
  if (bounded === undefined) return anyObject;
  try {
    // A registry of its own: zod's global one would keep every upstream schema of every job.
    return z.fromJSONSchema(bounded, { registry: z.registry() });
  } catch {
    // An upstream's schema zod cannot read is not guessed at: the call must still be an object, and the upstream checks the rest.
    return anyObject;
  }
}

function subjectOf(spec: UpstreamToolSpec): SubjectState {
  return { kind: 'subject', subject: `MCP server ${spec.server}, tool ${spec.tool}`, exists: true, identity: null, summary: UNOBSERVABLE_UPSTREAM, facts: {} };
}

function build(spec: UpstreamToolSpec): AnyTool {
  const category = upstreamCategory(spec.annotations);
  const idempotent = spec.annotations.idempotentHint === true || category === 'read';
  return defineTool({
    name: spec.name,
    description: spec.description === '' ? `Tool ${spec.tool} of the MCP server ${spec.server}.` : spec.description,
    category,
    risk: category === 'read' ? 'low' : category === 'delete' ? 'high' : 'medium',
    parameters: parametersOf(spec),
    needs: [],
    targetFields: [],
    // The reviewer approves exact arguments: none is edited into something the upstream never listed.
    editable: [],
    targets: () => [`mcp:${spec.server}/${spec.tool}`],
    prepare: () => Promise.resolve({ observed: [subjectOf(spec)], problems: [undefined] }),
    // Nothing to look at again; the arguments are bound by the fingerprint.
    revalidate: () => ({ kind: 'ok' }),
    async execute(host, args) {
      if (host.upstream === undefined) throw new ToolRefusal(`this tools worker has no MCP server ${spec.server} configured`);
      const record = anyObject.parse(args);
      return host.upstream.call({ server: spec.server, tool: spec.tool, args: record });
    },
    // An idempotent tool may run again after a crash mid-call; any other's effect cannot be seen from here.
    postcondition: () =>
      Promise.resolve(
        idempotent
          ? { present: false, detail: `${spec.name} declares itself idempotent; running it again is safe` }
          : { present: false, undetectable: true, detail: `whether ${spec.server} ran ${spec.tool} cannot be seen from here` },
      ),
  });
}

// eslint-disable-next-line airlock/no-module-state -- keyed by a spec object, holding only what is built from it
const built = new WeakMap<UpstreamToolSpec, AnyTool>();

/** The module of a spec, built once per spec object (the registry holds each spec in use once): a schema conversion is not free. */
export function upstreamTool(spec: UpstreamToolSpec): AnyTool {
  const known = built.get(spec);
  if (known !== undefined) return known;
  const tool = build(spec);
  built.set(spec, tool);
  return tool;
}
