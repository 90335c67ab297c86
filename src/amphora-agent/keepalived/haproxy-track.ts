/**
 * Keeps keepalived's track file (./render.ts) saying whether this amphora's HAProxy serves: 0 when it
 * does, 1 when it does not, which puts the VRRP instance in FAULT so the peer takes the VIP.
 *
 * Probed once per advert interval: the supervisor's word that the master runs with a loaded worker
 * (it hears an exit at once), then a `show info` on this amphora's own stats socket answered within
 * the interval (a hung worker). A dead process counts at once; unanswered probes count after FALL in a
 * row, and RISE answered ones in a row bring the instance back, so one slow reply moves nothing.
 */
import { writeFileAtomically } from '../atomic-file.js';

export const FALL = 2;
export const RISE = 2;

export interface HaproxyTrackOptions {
  file: string;
  intervalMs: number;
  /** The supervisor's view: false once the master exited or failed to load. */
  running: () => boolean;
  /** One probe of the stats socket, answered within `timeoutMs`. */
  answers: (timeoutMs: number) => Promise<boolean>;
  log: Pick<Console, 'info' | 'warn'>;
}

export class HaproxyTrack {
  private timer: NodeJS.Timeout | null = null;
  private healthy: boolean | null = null;
  private streak = 0;
  private probing = false;

  constructor(private options: HaproxyTrackOptions) {}

  /** Starts probing, or goes on at a new interval. */
  start(intervalMs = this.options.intervalMs): void {
    this.options = { ...this.options, intervalMs };
    this.stop();
    this.timer = setInterval(() => void this.tick(), intervalMs);
    void this.tick();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async tick(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      const running = this.options.running();
      const ok = running && (await this.options.answers(this.options.intervalMs));
      if (ok === this.healthy) {
        this.streak = 0;
        return;
      }
      this.streak++;
      // The first verdict, a dead process, or enough probes in a row against the current state.
      if (this.healthy === null || !running || this.streak >= (ok ? RISE : FALL)) this.set(ok, running ? 'its stats socket' : 'its process');
    } finally {
      this.probing = false;
    }
  }

  private set(healthy: boolean, by: string): void {
    this.streak = 0;
    if (this.healthy !== null) this.options.log[healthy ? 'info' : 'warn'](`haproxy ${healthy ? 'serves again' : 'does not serve'} (by ${by}): VRRP ${healthy ? 'may hold' : 'gives up'} the VIP`);
    this.healthy = healthy;
    writeFileAtomically(this.options.file, healthy ? '0\n' : '1\n', 0o644);
  }
}
