/** Base class for errors airlock raises on the Node side; the CLI prints these as one line. */
export class AirlockError extends Error {
  override name = 'AirlockError';
}

/** One or more environment variables had a bad value. */
export class ConfigError extends AirlockError {
  override name = 'ConfigError';
  constructor(readonly problems: ReadonlyArray<{ variable: string; message: string }>) {
    super(
      `invalid configuration: ${problems.map((p) => `${p.variable}: ${p.message}`).join('; ')}`,
    );
  }
}

/** A schema's refusal in one line: each issue as `path: message` (`(input)` for the whole), joined by `; `. */
export function issuesText(issues: ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }>): string {
  return issues.map((i) => `${i.path.map(String).join('.') || '(input)'}: ${i.message}`).join('; ');
}
