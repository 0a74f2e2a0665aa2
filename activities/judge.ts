import { ApplicationFailure } from '@temporalio/activity';
import type { OpenAI } from 'openai';
import { FailureTypes } from '../core/temporal/failure-types';
import {
  JUDGE_SYSTEM_PROMPT,
  MAX_JUDGED_RULES,
  judgeUserMessage,
  parseJudgeOutput,
  type JudgeCallSummary,
  type JudgeOutcome,
  type JudgeRuleInput,
} from '../core/judge/judge';
import { noMetrics, type AirlockMetrics } from './metrics';

export interface JudgeRulesInput {
  readonly rules: readonly JudgeRuleInput[];
  readonly call: JudgeCallSummary;
  readonly recentTurns: readonly string[];
  /** From the job's snapshot; defaults to the worker's configuration. */
  readonly model?: string;
  readonly timeoutMs?: number;
  /** Snapshot version and call fingerprint: the same question is answered once. */
  readonly cacheKey?: string;
}

export interface JudgeRulesResult {
  readonly outcome: JudgeOutcome;
  readonly latencyMs: number;
  readonly model: string;
  readonly cached: boolean;
}

export interface JudgeDeps {
  readonly openai: OpenAI;
  readonly model: string;
  readonly timeoutMs: number;
  /** Answers kept per worker, by cache key; 0 disables the cache. */
  readonly cacheSize?: number;
  /** Times the model calls; default: nothing. */
  readonly metrics?: AirlockMetrics;
}

export function createJudgeActivities(deps: JudgeDeps) {
  const cache = new Map<string, JudgeOutcome>();
  const cacheSize = deps.cacheSize ?? 1000;
  const metrics = deps.metrics ?? noMetrics;
  return {
    /**
     * One batched judge call. Judge failures are results, not errors: the
     * caller's failure table decides what they mean, and a retry storm
     * against a slow judge helps nobody.
     */
    async judgeRules(input: JudgeRulesInput): Promise<JudgeRulesResult> {
      if (input.rules.length === 0 || input.rules.length > MAX_JUDGED_RULES) {
        throw ApplicationFailure.nonRetryable(
          `judgeRules takes 1 to ${MAX_JUDGED_RULES} rules, got ${input.rules.length}`,
          FailureTypes.InvalidInput,
        );
      }
      const model = input.model ?? deps.model;
      const timeoutMs = input.timeoutMs ?? deps.timeoutMs;
      const key = input.cacheKey === undefined ? undefined : `${model}|${input.cacheKey}|${input.rules.map((r) => r.id).join(',')}`;
      const hit = key === undefined ? undefined : cache.get(key);
      if (hit !== undefined) return { outcome: hit, latencyMs: 0, model, cached: true };
      const started = Date.now();
      let outcome: JudgeOutcome;
      // Our own timer decides what a timeout is, whatever error class the transport reports.
      const controller = new AbortController();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, timeoutMs);
      try {
        const completion = await deps.openai.chat.completions.create(
          {
            model,
            temperature: 0,
            messages: [
              { role: 'system', content: JUDGE_SYSTEM_PROMPT },
              { role: 'user', content: judgeUserMessage(input) },
            ],
          },
          { signal: controller.signal, maxRetries: 0 },
        );
        const text = completion.choices[0]?.message?.content;
        outcome =
          typeof text === 'string'
            ? parseJudgeOutput(text, input.rules.map((r) => r.id))
            : { status: 'invalid', detail: 'answer has no text content' };
      } catch (err) {
        outcome = timedOut
          ? { status: 'timeout', detail: `no answer within ${timeoutMs} ms` }
          : { status: 'error', detail: err instanceof Error ? err.message : String(err) };
      } finally {
        clearTimeout(timer);
      }
      // Only valid answers are cached: a timeout deserves a fresh try next time.
      if (key !== undefined && outcome.status === 'ok' && cacheSize > 0) {
        if (cache.size >= cacheSize) cache.delete(cache.keys().next().value!);
        cache.set(key, outcome);
      }
      const latencyMs = Date.now() - started;
      metrics.judged(outcome.status, latencyMs);
      return { outcome, latencyMs, model, cached: false };
    },
  };
}

export type JudgeActivities = ReturnType<typeof createJudgeActivities>;
