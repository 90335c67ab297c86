/**
 * Replay and staleness judgement of signed heartbeat headers, per amphora: the newest boot
 * epoch seen and a sliding window of the sequence numbers accepted within it. Nothing is
 * stored: after a controller restart the first fresh heartbeat of each amphora is accepted
 * (a captured datagram older than the skew allowance is stale by then).
 *
 * No single value can block genuine heartbeats for long: a sequence number is accepted only
 * if the boot can have reached it sending at most one heartbeat per HEARTBEAT_MIN_INTERVAL_MS
 * (so `seq = 2^53-1` is refused, not adopted as a new maximum), an epoch only if it is not in
 * the future, and an agent restart (a newer epoch) starts a new window. Out-of-order arrivals
 * within the window (several health managers, a reordering network) are accepted once each.
 */
import { HEARTBEAT_MIN_INTERVAL_MS } from '../../../domain/amphora-config.js';
import type { HeartbeatHeader, Refusal } from '../../../amphora-agent/heartbeat.js';

/** Sequence numbers below the highest accepted that may still arrive once. */
export const REPLAY_WINDOW = 32;
/** Heartbeats a boot may send beyond one per minimum interval (a sender's first beats, a test's). */
const SEQ_SLACK = 16;
/** Amphorae silent this long are forgotten (failed over or deleted long ago); their next heartbeat is a first one. */
const IDLE_MS = 10 * 60_000;

interface Window {
  epoch: number;
  /** Highest sequence number accepted in this epoch. */
  top: number;
  /** Bit i set: `top - 1 - i` was accepted. */
  below: number;
  seenAt: number;
}

export class ReplayGuard {
  private readonly windows = new Map<string, Window>();
  private lastPrune = 0;

  /** `maxSkewMs`: how far the sender's clock (sentAt, epoch) may be from ours. */
  constructor(private readonly maxSkewMs: number) {}

  /** Null if `header` is fresh and new, and records it as seen; otherwise why not. */
  admit(header: HeartbeatHeader, now: number): Refusal | null {
    const { amphoraId, epoch, seq, sentAt } = header;
    if (Math.abs(now - sentAt) > this.maxSkewMs || epoch > now + this.maxSkewMs) return 'stale';
    if (seq > Math.max(0, sentAt - epoch) / HEARTBEAT_MIN_INTERVAL_MS + SEQ_SLACK) return 'replay';
    this.prune(now);
    const window = this.windows.get(amphoraId);
    if (!window || epoch > window.epoch) {
      this.windows.set(amphoraId, { epoch, top: seq, below: 0, seenAt: now });
      return null;
    }
    if (epoch < window.epoch) return 'replay';
    if (seq > window.top) {
      window.below = slid(window.below, seq - window.top);
      window.top = seq;
    } else {
      const bit = window.top - 1 - seq;
      if (seq === window.top || bit >= REPLAY_WINDOW || (window.below >>> bit) & 1) return 'replay';
      window.below = (window.below | (1 << bit)) >>> 0;
    }
    window.seenAt = now;
    return null;
  }

  private prune(now: number): void {
    if (now - this.lastPrune < IDLE_MS) return;
    this.lastPrune = now;
    for (const [id, window] of this.windows) if (now - window.seenAt > IDLE_MS) this.windows.delete(id);
  }
}

/** The mask after the top moved up by `shift`: the old top becomes bit shift-1 (JavaScript shifts by 32 or more wrap, so those are spelt out). */
function slid(below: number, shift: number): number {
  if (shift > REPLAY_WINDOW) return 0;
  const kept = shift === REPLAY_WINDOW ? 0 : below << shift;
  return (kept | (1 << (shift - 1))) >>> 0;
}
