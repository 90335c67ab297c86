/** Waiting in the benches: a pause, and polling for something that a bench times. */

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `probe` every `intervalMs` until it returns true, and resolves with performance.now() just after the
 * probe that did: when what it looks for was first seen. Resolves with null once `timeoutMs` have passed
 * without; a probe that throws ends the wait with its error.
 */
export async function pollUntil(probe: () => Promise<boolean>, intervalMs: number, timeoutMs: number): Promise<number | null> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const seen = await probe();
    const now = performance.now();
    if (seen) return now;
    if (now > deadline) return null;
    await sleep(intervalMs);
  }
}
