import { z } from 'zod';
import { parseDuration } from '../util/duration';
import { globToRegExp } from '../util/glob';
import { globCostProblem, regexCostProblem } from '../util/pattern-cost';
import { linearEngine, patternRegExp } from '../util/linear-regex';
import { toolCategories, toolDefinitions } from '../tools/registry';
import { machineNameSchema } from '../tools/machines';
import { defaultDeniedCommands, detectorNames, type DetectorName } from './detectors';
import { UPSTREAM_TOOL_NAME } from '../tools/upstream/upstream-spec';

export const hookPoints = ['tool.before', 'completion.before_accept'] as const;
export type HookPoint = (typeof hookPoints)[number];

/** The piece/movement a job runs in; rules may be scoped to them. */
export interface JobScope {
  readonly piece?: string | undefined;
  readonly movement?: string | undefined;
}

export const ruleActions = [
  'inject_instruction',
  'deny_current_tool',
  'request_approval',
  'stop_task',
  'audit_only',
  'notify_admin',
] as const;
export type RuleAction = (typeof ruleActions)[number];

const MAX_DURATION_MS = 366 * 86_400_000;

const duration = z
  .string()
  .refine((v) => parseDuration(v) !== undefined, { message: 'expected a duration such as "90s", "30m", "24h" or "7d"' })
  .refine((v) => (parseDuration(v) ?? 0) <= MAX_DURATION_MS, { message: 'at most 366d' });

const argPath = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/, 'expected an argument name such as "path" or "options.mode"');

const comparable = z.union([z.string(), z.number(), z.boolean(), z.null()]);

const operatorKeys = ['equals', 'in', 'glob', 'regex', 'lt', 'lte', 'gt', 'gte', 'exists'] as const;

const predicateSchema = z
  .strictObject({
    arg: argPath,
    equals: comparable.optional(),
    in: z.array(comparable).min(1).optional(),
    glob: z
      .string()
      .refine((g) => {
        try {
          globToRegExp(g);
          return true;
        } catch {
          return false;
        }
      }, 'not a valid glob pattern')
      .superRefine((g, ctx) => {
        const problem = linearEngine() ? undefined : globCostProblem(g);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
      })
      .optional(),
    regex: z
      .string()
      .superRefine((r, ctx) => {
        // The linear engine reads patterns without Unicode mode, where \p{…} would silently mean "p{…}".
        if (linearEngine() && /\\[pP]\{/.test(r)) {
          ctx.addIssue({ code: 'custom', message: 'Unicode property escapes (\\p{…}) are not supported; use a character class' });
          return;
        }
        try {
          patternRegExp(r);
        } catch (err) {
          const linear = err instanceof SyntaxError && /linear time/.test(err.message);
          ctx.addIssue({
            code: 'custom',
            message: linear
              ? 'it cannot be matched in time linear in the text (a backreference or a lookaround); write it without them'
              : 'not a valid regular expression',
          });
          return;
        }
        // Without the linear engine: the shapes known to backtrack are refused instead.
        const problem = linearEngine() ? undefined : regexCostProblem(r);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
      })
      .optional(),
    lt: z.number().optional(),
    lte: z.number().optional(),
    gt: z.number().optional(),
    gte: z.number().optional(),
    exists: z.boolean().optional(),
  })
  .refine((p) => operatorKeys.filter((k) => p[k] !== undefined).length === 1, {
    message: `a predicate needs exactly one of ${operatorKeys.join(', ')}`,
  });

export type Predicate = z.infer<typeof predicateSchema>;
/** A built-in detector as a condition: `{ detector: recursive_delete }`. */
export type DetectorCondition = { detector: DetectorName };
export type Condition = Predicate | DetectorCondition | { all: Condition[] } | { any: Condition[] } | { not: Condition };

export const conditionSchema: z.ZodType<Condition> = z.lazy(() =>
  z.union([
    z.strictObject({ all: z.array(conditionSchema).min(1) }),
    z.strictObject({ any: z.array(conditionSchema).min(1) }),
    z.strictObject({ not: conditionSchema }),
    z.strictObject({ detector: z.enum(detectorNames, { error: `expected a detector: ${detectorNames.join(', ')}` }) }),
    predicateSchema,
  ]),
);

/** Actions a judged rule may take on a `match`; a judge never denies or stops. */
export const judgedActions: readonly RuleAction[] = ['inject_instruction', 'audit_only', 'request_approval'];

// An upstream MCP server's tool is known by its form only: which ones exist is the tools config's business, not the rules file's.
const knownTool = z.string().refine((name) => toolDefinitions.has(name) || UPSTREAM_TOOL_NAME.test(name), { message: 'unknown tool name (built-in tools, or mcp_<server>_<tool> for an MCP server\'s)' });

export const ruleSchema = z
  .strictObject({
    id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, 'expected letters, digits, ".", "_" or "-"'),
    version: z.number().int().min(1),
    enabled: z.boolean().default(true),
    name: z.string().min(1).max(200),
    point: z.enum(hookPoints).default('tool.before'),
    scope: z
      .strictObject({
        tools: z.array(knownTool).min(1).optional(),
        categories: z.array(z.enum(toolCategories)).min(1).optional(),
        piece: z.array(z.string().min(1)).min(1).optional(),
        movement: z.array(z.string().min(1)).min(1).optional(),
        /** Machines of the tools config (`machines:`) whose calls the rule applies to. */
        machines: z.array(machineNameSchema).min(1).optional(),
      })
      .default({}),
    /** Deterministic condition on the call's arguments; absent means "every call in scope". */
    when: conditionSchema.optional(),
    /** Natural-language condition decided by the judge, after `when`. Shadow unless `enforceJudge`. */
    condition: z.string().trim().min(1).max(1000).optional(),
    action: z.enum(ruleActions),
    /** Registered text shown to the model (redirect, deny) or to the reviewer (approval). */
    instruction: z.string().min(1).max(4000).optional(),
    approval: z
      .strictObject({
        ttl: duration.default('24h'),
        reviewers: z.array(z.string().min(1)).min(1).optional(),
        editable: z.array(argPath).default([]),
        separateRequester: z.boolean().default(false),
        /** Decisions must be signed by a reviewer key or passkey listed in AIRLOCK_REVIEWER_KEYS. */
        signatureRequired: z.boolean().default(false),
        /** false: the change keeps nothing for undo even in a root set up for it (a job freeing space); its card says so. */
        reversible: z.boolean().optional(),
        /**
         * A reviewer may also approve later calls that are the same operation (same tool, real targets,
         * requester, arguments but `varies`, these rules at these versions), for at most `maxFor` and
         * `maxUses`. Absent: every call asks.
         */
        standing: z
          .strictObject({
            maxFor: duration,
            maxUses: z.number().int().min(1).max(10_000),
            varies: z.array(argPath).default([]),
          })
          .optional(),
      })
      .optional(),
    limits: z
      .strictObject({
        maxFires: z.number().int().min(1).optional(),
        cooldown: duration.optional(),
      })
      .optional(),
    shadow: z.boolean().default(false),
    /** Let a judge `match` act (only inject_instruction, audit_only, request_approval). */
    enforceJudge: z.boolean().default(false),
  })
  .superRefine((rule, ctx) => {
    if (rule.enforceJudge && rule.condition === undefined) {
      ctx.addIssue({ code: 'custom', path: ['enforceJudge'], message: 'enforceJudge needs a natural-language condition' });
    }
    if (rule.condition !== undefined && rule.enforceJudge && !judgedActions.includes(rule.action)) {
      ctx.addIssue({
        code: 'custom',
        path: ['action'],
        message: `a judged rule may only ${judgedActions.join(', ')}; the judge never denies or stops`,
      });
    }
    if (rule.point === 'completion.before_accept' && rule.condition !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['condition'], message: 'completion.before_accept rules are deterministic only' });
    }
    if (rule.action === 'inject_instruction' && rule.instruction === undefined) {
      ctx.addIssue({ code: 'custom', path: ['instruction'], message: 'inject_instruction needs an instruction' });
    }
    if (rule.limits !== undefined && ['request_approval', 'deny_current_tool', 'stop_task'].includes(rule.action)) {
      // A limit on a gate would switch the gate off once spent.
      ctx.addIssue({
        code: 'custom',
        path: ['limits'],
        message: 'limits only apply to inject_instruction, audit_only and notify_admin rules; a gate never switches itself off',
      });
    }
    if (rule.approval !== undefined && rule.action !== 'request_approval') {
      ctx.addIssue({ code: 'custom', path: ['approval'], message: 'approval settings only apply to request_approval' });
    }
    if (
      rule.point === 'completion.before_accept' &&
      !['inject_instruction', 'deny_current_tool', 'audit_only', 'notify_admin'].includes(rule.action)
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['action'],
        message: 'completion.before_accept rules may only inject_instruction, deny_current_tool, audit_only or notify_admin',
      });
    }
    if (rule.approval?.editable !== undefined && rule.scope.tools !== undefined) {
      for (const [i, field] of rule.approval.editable.entries()) {
        const top = field.split('.')[0]!;
        for (const toolName of rule.scope.tools) {
          const tool = toolDefinitions.get(toolName);
          const shape = (tool?.parameters as unknown as { shape?: Record<string, unknown> } | undefined)?.shape;
          if (shape !== undefined && !(top in shape)) {
            ctx.addIssue({
              code: 'custom',
              path: ['approval', 'editable', i],
              message: `tool ${toolName} has no argument "${top}"`,
            });
          } else if (tool !== undefined && !tool.editable.includes(top)) {
            ctx.addIssue({
              code: 'custom',
              path: ['approval', 'editable', i],
              message: `tool ${toolName} does not let a reviewer edit "${top}" (editable: ${tool.editable.join(', ') || 'none'})`,
            });
          }
        }
      }
    }
  });

export type Rule = z.output<typeof ruleSchema>;
export type RuleInput = z.input<typeof ruleSchema>;

export const rulesFileSchema = z
  .strictObject({
    version: z.literal(1),
    /** Always-on instructions added to every job's system prompt. */
    instructions: z.array(z.string().min(1).max(4000)).default([]),
    /** Settings of the built-in detectors. */
    detectors: z
      .strictObject({
        allowedHosts: z.array(z.string().regex(/^(\*\.)?[A-Za-z0-9.-]+$/, 'expected a host name such as "api.example.com" or "*.example.com"')).default([]),
        deniedCommands: z.array(z.string().min(1)).default(defaultDeniedCommands),
      })
      .default({ allowedHosts: [], deniedCommands: defaultDeniedCommands }),
    rules: z.array(ruleSchema).default([]),
  })
  .superRefine((file, ctx) => {
    const seen = new Map<string, number>();
    file.rules.forEach((rule, i) => {
      const first = seen.get(rule.id);
      if (first !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['rules', i, 'id'], message: `duplicate rule id (also rules[${first}])` });
      } else seen.set(rule.id, i);
    });
  });

export type RulesFile = z.output<typeof rulesFileSchema>;

export interface RulesFileProblem {
  /** The rule's id when the problem is inside a rule that has one. */
  readonly ruleId: string | undefined;
  /** Field path inside the rule (or the file), e.g. `approval.ttl`. */
  readonly field: string;
  readonly message: string;
}

/** Every problem of a rules document, each naming the rule id and the field. */
export function rulesFileProblems(raw: unknown, error: z.ZodError): RulesFileProblem[] {
  const rules = (raw as { rules?: unknown })?.rules;
  return error.issues.map((issue) => {
    const path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
    if (path[0] === 'rules' && typeof path[1] === 'number') {
      const entry = Array.isArray(rules) ? (rules[path[1]] as { id?: unknown } | undefined) : undefined;
      const ruleId = typeof entry?.id === 'string' ? entry.id : undefined;
      const inner = formatPath(path.slice(2));
      // Without a usable id, the position is the only way to find the rule.
      const field = ruleId === undefined ? formatPath(path) : inner === '' ? '(rule)' : inner;
      return { ruleId, field, message: issue.message };
    }
    return { ruleId: undefined, field: formatPath(path) || '(file)', message: issue.message };
  });
}

export function formatRulesFileProblem(p: RulesFileProblem): string {
  return p.ruleId === undefined ? `${p.field}: ${p.message}` : `rule ${p.ruleId}: ${p.field}: ${p.message}`;
}

function formatPath(path: ReadonlyArray<string | number>): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${p}`)).join('');
}
