/**
 * Resolves on the first SIGINT or SIGTERM. Called before a long-running
 * command says it is ready: a supervisor (or a test) may stop it the moment
 * it reads that line, and a signal that arrives before anyone listens ends
 * the process by its default action instead of a clean close.
 */
export function untilStopped(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.removeListener('SIGINT', stop);
      process.removeListener('SIGTERM', stop);
      resolve(signal);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
