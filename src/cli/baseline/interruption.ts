/**
 * The interruption a client sees while a load balancer's VIP changes hands: a new connection every 20 ms, each
 * given 500 ms to answer, and the span from the first failed one to the first answered after the last failure.
 * `ostia baseline` times a failover with it; the VIP-takeover tests and the lifecycle bench time their faults
 * (test/support/vip-takeover.ts).
 */
import { request } from 'node:http';

/** How often the client opens a connection, and how long it waits for an answer. */
export const PROBE_EVERY_MS = 20;
export const PROBE_TIMEOUT_MS = 500;
/** Longest wait for the VIP to answer again after a fault. */
const RECOVERY_BOUND_MS = 20_000;

/** One GET on a new connection; network failures resolve as status 0. */
export function httpGet(host: string, port: number, path = '/', timeoutMs = 3000): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request({ host, port, path, agent: false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end();
  });
}

interface Outcome {
  at: number;
  ok: boolean;
}

/** Opens a new connection every PROBE_EVERY_MS (each given PROBE_TIMEOUT_MS to answer) until `enough` says so, at most `boundMs`. */
async function probe(vip: string, port: number, enough: (outcomes: readonly Outcome[], now: number) => boolean, boundMs = RECOVERY_BOUND_MS): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  const pending: Array<Promise<void>> = [];
  const start = Date.now();
  while (Date.now() - start < boundMs) {
    const at = Date.now();
    pending.push(httpGet(vip, port, '/', PROBE_TIMEOUT_MS).then((r) => void outcomes.push({ at, ok: r.status === 200 })));
    if (enough(outcomes, at)) break;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, PROBE_EVERY_MS - (Date.now() - at))));
  }
  await Promise.all(pending);
  return outcomes.sort((a, b) => a.at - b.at);
}

const lastFailureOf = (outcomes: readonly Outcome[]) => {
  const failures = outcomes.filter((o) => !o.ok);
  return failures.length ? Math.max(...failures.map((o) => o.at)) : null;
};

/** The span from the first failed connection to the first that succeeded after the last failed one, 0 when none failed. */
function gap(vip: string, port: number, outcomes: readonly Outcome[], boundMs: number): number {
  const firstFailure = outcomes.find((o) => !o.ok);
  if (!firstFailure) return 0;
  const lastFailure = lastFailureOf(outcomes)!;
  const recovered = outcomes.find((o) => o.ok && o.at > lastFailure);
  if (!recovered) throw new Error(`the VIP ${vip}:${port} did not answer again within ${boundMs / 1000} s (${outcomes.length} connections)`);
  return recovered.at - firstFailure.at;
}

/**
 * The interruption `fault()` causes, probing from it on until the VIP has answered for a second after the
 * last failure (3 s when nothing failed): see gap().
 */
export async function interruption(vip: string, port: number, fault: () => Promise<void>): Promise<number> {
  const start = Date.now();
  await fault();
  const outcomes = await probe(vip, port, (seen, now) => {
    const lastFailure = lastFailureOf(seen);
    return lastFailure === null ? now - start > 3_000 : now - lastFailure > 1_000 + PROBE_TIMEOUT_MS;
  });
  return gap(vip, port, outcomes, RECOVERY_BOUND_MS);
}

/** Connections opened while `action` runs (at most `boundMs`) and for a second after it: how many, how many failed, and the interruption. */
export async function failuresDuring(vip: string, port: number, action: () => Promise<void>, boundMs: number): Promise<{ connections: number; failed: number; interruptionMs: number }> {
  let doneAt: number | null = null;
  let failure: unknown;
  const running = action().then(
    () => void (doneAt = Date.now()),
    (e: unknown) => void ((failure = e), (doneAt = Date.now())),
  );
  const outcomes = await probe(vip, port, (_, now) => doneAt !== null && now - doneAt > 1_000, boundMs);
  await running;
  if (failure) throw failure;
  return { connections: outcomes.length, failed: outcomes.filter((o) => !o.ok).length, interruptionMs: gap(vip, port, outcomes, boundMs) };
}
