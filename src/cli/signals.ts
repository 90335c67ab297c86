/** Shutdown on signals, shared by the long-running commands. */

/** Resolves on the first SIGINT/SIGTERM; a second one means "now", without a clean close. */
export function stopSignal(): Promise<NodeJS.Signals> {
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];
  return new Promise((resolve) => {
    const first = (signal: NodeJS.Signals): void => {
      for (const s of signals) {
        process.off(s, first);
        process.once(s, () => {
          process.stderr.write(`ostia: ${s} during shutdown, exiting at once\n`);
          process.exit(1);
        });
      }
      resolve(signal);
    };
    for (const s of signals) process.on(s, first);
  });
}
