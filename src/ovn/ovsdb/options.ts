/** Connection options of the OVSDB client: given → defaults → validated, in that order. */
import type { Logger } from 'pino';
import type { TlsFiles } from './json-rpc.js';

export interface OvsdbClientOptions {
  /** Our echo after this much silence; a second silent interval drops the connection. 0: off. */
  probeIntervalMs: number;
  /** How long the first connect() keeps trying before it gives up. */
  connectTimeoutMs: number;
  /** Reconnect back-off: first delay, doubled per failed attempt, capped. */
  backoffInitialMs: number;
  backoffMaxMs: number;
  /** Required for ssl: remotes. */
  tls?: TlsFiles;
  /** Aborting stops connecting and reconnecting, like close(). */
  signal?: AbortSignal;
  logger?: Logger;
}

/**
 * The upstream provider's [ovn] defaults: ovsdb_probe_interval 60000 ms, ovsdb_connection_timeout
 * 180 s; the back-off is Open vSwitch's reconnect FSM's (1 s doubling up to 8 s).
 */
export const OVSDB_CLIENT_DEFAULTS = {
  probeIntervalMs: 60_000,
  connectTimeoutMs: 180_000,
  backoffInitialMs: 1_000,
  backoffMaxMs: 8_000,
} as const;

export class OvsdbOptionsError extends Error {}

export function resolveOptions(given: Partial<OvsdbClientOptions> = {}): OvsdbClientOptions {
  const o: OvsdbClientOptions = { ...OVSDB_CLIENT_DEFAULTS };
  for (const [k, v] of Object.entries(given)) if (v !== undefined) (o as unknown as Record<string, unknown>)[k] = v;
  const int = (name: keyof typeof OVSDB_CLIENT_DEFAULTS, min: number) => {
    const v = o[name];
    if (!Number.isInteger(v) || v < min) throw new OvsdbOptionsError(`${name} must be an integer >= ${min}, got ${String(v)}`);
  };
  int('connectTimeoutMs', 1);
  int('backoffInitialMs', 10);
  int('backoffMaxMs', 10);
  int('probeIntervalMs', 0);
  if (o.probeIntervalMs !== 0 && o.probeIntervalMs < 100) {
    throw new OvsdbOptionsError(`probeIntervalMs must be 0 (off) or >= 100, got ${o.probeIntervalMs}`);
  }
  if (o.backoffMaxMs < o.backoffInitialMs) {
    throw new OvsdbOptionsError(`backoffMaxMs (${o.backoffMaxMs}) is below backoffInitialMs (${o.backoffInitialMs})`);
  }
  if (o.tls && !(o.tls.key && o.tls.cert && o.tls.ca)) throw new OvsdbOptionsError('tls needs key, cert and ca');
  return o;
}

/** Delay before reconnect attempt n (0-based). */
export function backoffDelay(o: Pick<OvsdbClientOptions, 'backoffInitialMs' | 'backoffMaxMs'>, attempt: number): number {
  return Math.min(o.backoffMaxMs, o.backoffInitialMs * 2 ** Math.min(attempt, 30));
}
