/**
 * The agent's VRRP side, for an amphora of an ACTIVE_STANDBY pair: keepalived.conf rendered and
 * checked (`keepalived -t`) before anything changes, applied after HAProxy (start, SIGHUP or stop),
 * and the track file that ties the VIP to this amphora's HAProxy kept up to date while keepalived runs.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { AmphoraConfig } from '../../domain/amphora-config.js';
import { writeFileAtomically } from '../atomic-file.js';
import { HaproxyRuntime } from '../haproxy/runtime.js';
import { HaproxyTrack } from './haproxy-track.js';
import { KeepalivedProcess, type KeepalivedFiles } from './process.js';
import { renderKeepalivedConfig } from './render.js';

export interface VrrpFiles extends KeepalivedFiles {
  trackFile: string;
}

export interface VrrpOptions {
  files: VrrpFiles;
  /** Whether the supervisor has this amphora's HAProxy running. */
  haproxyRunning: () => boolean;
  /** Its stats socket. */
  statsSocket: string;
  log: Pick<Console, 'info' | 'warn' | 'error'>;
  binary?: string;
}

/** keepalived refused the rendered file. */
export class VrrpRefused extends Error {
  constructor(readonly output: string) {
    super('keepalived refused the configuration');
  }
}

export class Vrrp {
  readonly keepalived: KeepalivedProcess;
  private readonly track: HaproxyTrack;

  constructor(private readonly options: VrrpOptions) {
    const { files, log } = options;
    this.keepalived = new KeepalivedProcess({ binary: options.binary, files, log });
    this.track = new HaproxyTrack({
      file: files.trackFile,
      intervalMs: 1000,
      running: options.haproxyRunning,
      answers: (timeoutMs) => new HaproxyRuntime(options.statsSocket, timeoutMs).answers(),
      log,
    });
  }

  /** keepalived.conf for `config` (null: no pair, keepalived is not wanted); throws RenderError or VrrpRefused. */
  async prepare(config: AmphoraConfig): Promise<string | null> {
    const text = renderKeepalivedConfig(config, { trackFile: this.options.files.trackFile });
    if (text === null) return null;
    const candidate = join(dirname(this.options.files.config), `.keepalived-check-${randomBytes(6).toString('hex')}.conf`);
    writeFileSync(candidate, text, { mode: 0o600 });
    try {
      const refusal = await this.keepalived.validate(candidate);
      if (refusal !== null) throw new VrrpRefused(refusal.split(candidate).join('keepalived.conf'));
      return text;
    } finally {
      rmSync(candidate, { force: true });
    }
  }

  /** Puts a prepared file in force; the advert interval paces the HAProxy probes. */
  async apply(config: AmphoraConfig, text: string | null): Promise<void> {
    if (text === null || !config.vrrp) return this.stop();
    const { config: file } = this.options.files;
    const unchanged = this.keepalived.running && existsSync(file) && readFileSync(file, 'utf8') === text;
    this.track.start(config.vrrp.advertIntervalMs);
    if (unchanged) return;
    writeFileAtomically(file, text);
    await this.keepalived.apply();
  }

  /** keepalived gives the VIP up (priority 0) and ends; probing ends with it. */
  async stop(): Promise<void> {
    this.track.stop();
    await this.keepalived.stop();
  }
}
