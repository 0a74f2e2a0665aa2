import { HttpEngine } from '../../host/net/http-engine';
import type { BenchOptions } from './args';
import type { Figure } from './figures';
import { call, completed, completeTurn, startJob } from './jobs';
import type { Stack } from './stack';
import { interleaved, pairedRatios, sampled, timed } from './stats';

/**
 * What the gate adds to one allowed `http_request` (a GET to a local server
 * the tools config allows, under the built-in rules with that server in
 * `allowedHosts`): the same request sent
 * by the engine directly, a job that makes it in one turn, and a job with
 * no call at all, interleaved round by round. The call's share of a job is
 * the paired difference of the two jobs (one more model turn, the policy
 * activity, workflow tasks, the tools activity with its prepare and
 * execute); the gate's addition is that share minus the direct request.
 */

type Variant = 'direct' | 'job' | 'empty';
const variants: readonly Variant[] = ['direct', 'job', 'empty'];

async function runOnce(stack: Stack, engine: HttpEngine, variant: Variant, id: string): Promise<number> {
  if (variant === 'direct') {
    const { ms, value } = await timed(() => engine.send({ method: 'GET', url: stack.http.url }));
    if (value.status !== 200) throw new Error(`the direct request answered ${value.status}`);
    return ms;
  }
  stack.useRules('builtInLocalHost');
  const sent = stack.http.requests();
  stack.replay.setScript({ turns: [...(variant === 'job' ? [{ tool_calls: [call('http_request', { method: 'GET', url: stack.http.url })] }] : []), completeTurn] });
  const { ms, value } = await timed(async () => {
    await startJob(stack.client, id);
    // A job that parks (the call gated after all) never completes: a broken bench, said so.
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${id} did not complete within 60 s (is the call gated?)`)), 60_000);
    });
    try {
      return await Promise.race([completed(stack.client, id), stuck]);
    } finally {
      clearTimeout(timer);
    }
  });
  if (variant === 'job' && (value.turns !== 2 || stack.http.requests() !== sent + 1)) {
    throw new Error(`${id} took ${value.turns} turns and sent ${stack.http.requests() - sent} requests, expected 2 and 1`);
  }
  return ms;
}

export async function httpPart(stack: Stack, options: BenchOptions): Promise<Figure[]> {
  const engine = new HttpEngine({ hosts: stack.http.hosts });
  const id = (v: Variant, tag: string) => `http-${v}-${tag}`;
  await interleaved(variants, 1, (v, round) => runOnce(stack, engine, v, id(v, `warm${round}`)));
  const [direct = [], job = [], empty = []] = await interleaved(variants, options.gateRounds, (v, round) => runOnce(stack, engine, v, id(v, String(round))));
  const share = job.map((j, i) => j - (empty[i] ?? Number.NaN)).filter((v) => !Number.isNaN(v));
  const added = share.map((s, i) => s - (direct[i] ?? Number.NaN)).filter((v) => !Number.isNaN(v));
  const figure = (name: string, values: readonly number[], note: string, unit = 'ms'): Figure => ({ part: 'http', name, unit, ...sampled(values), note });
  return [
    figure('GET, engine called directly', direct, 'resolve, connect, response'),
    figure('job: 1 turn x 1 allowed GET', job, 'start to result, built-in rules'),
    figure('job: no call', empty, 'start to result'),
    figure('the call\'s share of a job', share, 'job - no-call job, paired per round'),
    figure('added by the gate per allowed GET', added, 'share - direct, paired per round'),
    figure('share / direct', pairedRatios(share, direct), 'paired per round', 'ratio'),
  ];
}
