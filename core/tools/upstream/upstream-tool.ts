import { z } from 'zod';
import type { ObservedState, SubjectState } from '../observed-state';
import type { ToolHost } from '../tool-host';
import { ToolRefusal } from '../tool-refusal';
import { defineTool, type AnyTool, type Prepared } from '../tool-module';
import { boundedSchema } from './bounded-schema';
import { upstreamCategory, type UpstreamToolSpec } from './upstream-spec';

/**
 * An upstream MCP server's tool as a tool module: its arguments checked
 * against the upstream's own JSON Schema (made a zod schema, so the
 * workflow, the gate and the tools side check it alike), its category
 * from its annotations (believed only where the tools config trusts its
 * server), and one target airlock cannot look at: the upstream does
 * whatever it does with the arguments. What a reviewer approves is these
 * exact arguments sent to this exact definition of the tool (its digest,
 * listed again before the run); nothing else can be re-validated.
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

/** The tool as the card shows it; its identity is the definition digest its server lists now (null where no server was asked). */
function subjectOf(spec: UpstreamToolSpec, definition: string | null): SubjectState {
  return { kind: 'subject', subject: `MCP server ${spec.server}, tool ${spec.tool}`, exists: true, identity: definition, summary: UNOBSERVABLE_UPSTREAM, facts: {} };
}

const named = (spec: UpstreamToolSpec) => `tool ${spec.tool} of MCP server ${spec.server}`;

/**
 * The tool as its server lists it now, for the card and for the check
 * before the run: refused when the server no longer lists it, or lists it
 * with another definition than the one the tools worker lends (a tool
 * changed, or one that appeared later, is not offered until the worker
 * lists it again on purpose, at its restart).
 */
async function prepareOf(spec: UpstreamToolSpec, host: ToolHost): Promise<Prepared> {
  if (host.upstream === undefined) return { observed: [subjectOf(spec, null)], problems: [undefined] };
  let now: { readonly digest: string | null; readonly lent: boolean };
  try {
    now = await host.upstream.definition({ server: spec.server, tool: spec.tool });
  } catch (err) {
    if (!(err instanceof ToolRefusal)) throw err;
    return { observed: [subjectOf(spec, null)], problems: [{ kind: 'unobservable', reason: err.message }] };
  }
  if (now.digest === null) return { observed: [subjectOf(spec, null)], problems: [{ kind: 'refused', reason: `MCP server ${spec.server} no longer lists ${spec.tool}; nothing can be sent` }] };
  if (!now.lent) {
    const reason = `${named(spec)} changed since the tools worker listed it (its description, input schema or annotations are not the ones it lends); restart the tools worker to list it again, then ask again`;
    return { observed: [subjectOf(spec, now.digest)], problems: [{ kind: 'refused', reason }] };
  }
  return { observed: [subjectOf(spec, now.digest)], problems: [undefined] };
}

/** The definition digest a card was made for; null when none was asked. */
function definitionOf(observed: readonly ObservedState[] | undefined): string | null {
  const state = observed?.[0];
  return state !== undefined && 'kind' in state && state.kind === 'subject' ? state.identity : null;
}

function build(spec: UpstreamToolSpec): AnyTool {
  const category = upstreamCategory(spec);
  // Sent again after a crash only on a trusted server's word (a hint that asks less care is taken from no other).
  const idempotent = category === 'read' || (spec.trustAnnotations === true && spec.annotations.idempotentHint === true);
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
    prepare: (host) => prepareOf(spec, host),
    // The arguments are bound by the fingerprint; the tool itself by its definition, listed again just now.
    revalidate(_host, { approved, now }) {
      const problem = now.problems[0];
      if (problem !== undefined) return { kind: 'changed', reason: problem.reason };
      const then = definitionOf(approved);
      if (then !== null && then !== definitionOf(now.observed)) {
        return { kind: 'changed', reason: `${named(spec)} changed after the call was approved (its description, input schema or annotations are not those its card was made for); nothing was sent` };
      }
      return { kind: 'ok' };
    },
    async execute(host, args, before) {
      if (host.upstream === undefined) throw new ToolRefusal(`this tools worker has no MCP server ${spec.server} configured`);
      const record = anyObject.parse(args);
      // The definition the job's rules judged (its grant binds it); without one (grants of builds before), the one its card was made for.
      // A card made for another definition than the rules judged is refused either way: by the revalidation, or here.
      const definition = host.definition ?? definitionOf(before);
      return host.upstream.call({ server: spec.server, tool: spec.tool, args: record, ...(definition !== null ? { definition } : {}) });
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
