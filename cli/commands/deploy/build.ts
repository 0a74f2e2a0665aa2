import type { AirlockConfig } from '../../../core/config/config';
import { buildIdSchema } from '../../../core/temporal/deployments';
import { UsageError } from '../../../client/errors';

/**
 * The build a deploy command means: the one named, else this installation's
 * (AIRLOCK_BUILD_ID, else the package version plus a hash of the workflow
 * bundle its agent worker would load).
 */
export async function buildIdArg(positionals: readonly string[], config: AirlockConfig, usage: string): Promise<string> {
  const [given, ...rest] = positionals;
  if (rest.length > 0) throw new UsageError(`expected at most one build id; usage: ${usage}`);
  if (given !== undefined) {
    const parsed = buildIdSchema.safeParse(given);
    if (!parsed.success) throw new UsageError(`build id ${JSON.stringify(given)}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    return parsed.data;
  }
  if (config.buildId !== undefined) return config.buildId;
  const { loadWorkflowCode, defaultWorkflowSource } = await import('../../../workers/workflow-code');
  const { failureMessagesOf } = await import('../../../workers/workflow-bundle');
  const { dataConverterFor } = await import('../../../host/temporal/data-converter');
  return (await loadWorkflowCode({ source: defaultWorkflowSource(), failures: failureMessagesOf(dataConverterFor(config)) })).buildId;
}
