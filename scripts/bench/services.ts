import { readFileSync } from 'node:fs';
import type { ReplayScript } from '../../core/model/replay-script';
import { servicesConfigSchema } from '../../core/config/tools/services';
import { Services } from '../../host/services/services';
import type { BenchOptions } from './args';
import type { Figure } from './figures';
import { call, completed, completeTurn, startJob } from './jobs';
import { BENCH_SERVICE, type Stack } from './stack';
import { interleaved, sampled, timed } from './stats';

/**
 * The gate's cost for an allowed `service_status`: jobs of TURNS turns of
 * one `service_status` each and jobs of `complete` alone, interleaved, give
 * the time one allowed call adds through the workflow, policy and the
 * tools queue; the same adapter's `status()` called directly in this
 * process is what the call itself costs.
 */

const TURNS = 5;
const statusTurns: ReplayScript = { turns: [...Array.from({ length: TURNS }, () => ({ tool_calls: [call('service_status', { service: BENCH_SERVICE })] })), completeTurn] };
const emptyJob: ReplayScript = { turns: [completeTurn] };

export async function servicesPart(stack: Stack, options: BenchOptions): Promise<Figure[]> {
  const config = servicesConfigSchema.parse((JSON.parse(readFileSync(stack.toolsConfig, 'utf8')) as { services: unknown }).services);
  const adapter = Services.fromConfig(config).get(BENCH_SERVICE);
  const started = await adapter.start(null);
  try {
    stack.useRules('builtIn');
    const variants = ['status', 'empty', 'direct'] as const;
    const runOnce = async (variant: (typeof variants)[number], id: string): Promise<number> => {
      if (variant === 'direct') {
        // As many calls as a status job makes, timed together: the same work without the gate.
        return (await timed(async () => {
          for (let i = 0; i < TURNS; i++) await adapter.status();
        })).ms;
      }
      stack.replay.setScript(variant === 'status' ? statusTurns : emptyJob);
      return (await timed(async () => {
        await startJob(stack.client, id);
        await completed(stack.client, id);
      })).ms;
    };
    await interleaved(variants, 1, (v, round) => runOnce(v, `svc-${v}-warm${round}`));
    // The figures mean something only if the calls really ran: the model must have read the status.
    const seen = stack.replay.requests.flatMap((r) => r.messages).filter((m) => m.role === 'tool').map((m) => String(m.content));
    if (!seen.some((text) => text.startsWith(`${BENCH_SERVICE} (process): healthy`))) {
      throw new Error(`service_status did not run in the warm-up job (tool results: ${JSON.stringify(seen.slice(-2))})`);
    }
    const rounds = options.gateRounds;
    const [statusJobs = [], emptyJobs = [], direct = []] = await interleaved(variants, rounds, (v, round) => runOnce(v, `svc-${v}-${round}`));
    // Per call, paired by round: (job with TURNS calls − job without) / TURNS, and the direct call.
    const gated = statusJobs.map((ms, i) => (ms - (emptyJobs[i] ?? Number.NaN)) / TURNS);
    const directPerCall = direct.map((ms) => ms / TURNS);
    const ratios = gated.map((ms, i) => ms / (directPerCall[i] ?? Number.NaN)).filter((r) => Number.isFinite(r));
    return [
      { part: 'services', name: `service_status, adapter called directly (process, pid check)`, unit: 'ms', ...sampled(directPerCall), note: 'per call' },
      { part: 'services', name: `service_status through an allowed job turn`, unit: 'ms', ...sampled(gated), note: `per call: (${TURNS} turns − 0) / ${TURNS}, paired per round` },
      { part: 'services', name: 'gated / direct', unit: 'ratio', ...sampled(ratios), note: 'per call, paired per round' },
      { part: 'services', name: 'job of 1 turn (complete only)', unit: 'ms', ...sampled(emptyJobs), note: 'start to result' },
    ];
  } finally {
    await adapter.stop(started.identity).catch(() => undefined);
  }
}
