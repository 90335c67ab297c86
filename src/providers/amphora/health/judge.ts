/**
 * Judges each heartbeat datagram (wire format in amphora-agent/heartbeat.ts): its signature with
 * the key derived from the amphora id it names (no lookup, no database), then replay and
 * staleness (replay.ts) before anything is inflated, and counts every outcome by reason.
 */
import type { Heartbeat } from '../../../domain/amphora-config.js';
import { heartbeatKey } from '../heartbeat-key.js';
import { decodeHeartbeat, REFUSALS, type Refusal } from '../../../amphora-agent/heartbeat.js';
import { ReplayGuard } from './replay.js';

export interface JudgeCounters {
  received: number;
  accepted: number;
  refused: Record<Refusal, number>;
}

export function noRefusals(): Record<Refusal, number> {
  return Object.fromEntries(REFUSALS.map((r) => [r, 0])) as Record<Refusal, number>;
}

export class HeartbeatJudge {
  readonly counters: JudgeCounters = { received: 0, accepted: 0, refused: noRefusals() };
  private readonly replay: ReplayGuard;

  constructor(
    private readonly secret: string,
    maxSkewMs: number,
  ) {
    this.replay = new ReplayGuard(maxSkewMs);
  }

  /** The heartbeat if `datagram` is accepted; null (and counted by reason) if refused. */
  judge(datagram: Buffer, now: number): Heartbeat | null {
    this.counters.received++;
    const decoded = decodeHeartbeat(
      datagram,
      (id) => heartbeatKey(this.secret, id),
      (header) => this.replay.admit(header, now),
    );
    if ('refused' in decoded) {
      this.counters.refused[decoded.refused]++;
      return null;
    }
    this.counters.accepted++;
    return decoded.heartbeat;
  }
}
