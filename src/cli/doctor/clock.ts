/**
 * Clock skew, as an interval (a clock read over a network is known only within the time the reading
 * took, and to the resolution it is given in). Heartbeats are refused as stale when their send time is
 * more than amphora.heartbeatTimeoutMs from the receiver's clock, and leases and heartbeat times written
 * by Ostia processes on several machines are compared with one another's clocks: beyond that limit
 * things break, and beyond a second something is off.
 */
import type { Result } from './verdict.js';

const WARN_MS = 1000;

export function clockVerdict(what: string, skew: { low: number; high: number }, limitMs: number): [Result, string] {
  const least = skew.low > 0 ? skew.low : skew.high < 0 ? -skew.high : 0;
  const sign = skew.low > 0 ? 'ahead of' : 'behind';
  const span = `${(skew.low / 1000).toFixed(2)} s to ${(skew.high / 1000).toFixed(2)} s`;
  if (least === 0) return ['ok', `${what}'s clock agrees with this machine's (offset between ${span}).`];
  if (least > limitMs)
    return ['FAIL', `${what}'s clock is at least ${(least / 1000).toFixed(1)} s ${sign} this machine's, beyond amphora.heartbeatTimeoutMs (${limitMs / 1000} s): heartbeats are refused as stale; synchronise both with NTP (chrony, systemd-timesyncd).`];
  if (least > WARN_MS) return ['WARN', `${what}'s clock is at least ${(least / 1000).toFixed(1)} s ${sign} this machine's: synchronise both with NTP before it reaches ${limitMs / 1000} s, where heartbeats are refused.`];
  return ['ok', `${what}'s clock is within ${(WARN_MS / 1000).toFixed(0)} s of this machine's (offset between ${span}).`];
}
