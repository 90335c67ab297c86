/**
 * Health checks of UDP pools' members, run by the agent (HAProxy checks the pools it serves;
 * these pools are nftables'). Each enabled member of a pool with an enabled monitor is checked
 * every `delay` seconds (at least one, as the HAProxy renderer does), each check bounded by
 * `timeout`; `maxRetriesDown` consecutive failures take a member down, `maxRetries` consecutive
 * successes bring it back, and it starts up, as HAProxy's servers do.
 *
 *   UDP-CONNECT  a datagram to the member's port on a connected socket: an ICMP port unreachable
 *                (ECONNREFUSED) or any other socket error fails it; a reply or silence until the
 *                timeout passes. Octavia's check does the same (`nc -uz`, which reports success
 *                unless the port is refused): a UDP service need not answer an empty datagram.
 *   TCP          a connection to the member's monitor port, closed at once.
 *   PING         one ICMP echo with `ping` (iputils), which the agent's CAP_NET_RAW lets open its
 *                raw socket: Node has no ICMP sockets, and unprivileged ones are off by default.
 *   HTTP         a request with the monitor's method, path, version and Host to the member's
 *                monitor address and port; a status among the expected codes passes.
 */
import { execFile } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { request } from 'node:http';
import { connect } from 'node:net';
import type { MonitorConfig, PoolConfig } from '../../domain/amphora-config.js';
import { HealthMonitorDefaults } from '../../domain/defaults.js';
import { HttpMethod } from '../../domain/enums.js';
import { isUrlPath } from '../../domain/rules/healthmonitor.js';
import { ipVersion } from '../../domain/net.js';
import * as enc from '../haproxy/encoders.js';
import { RenderError } from '../haproxy/encoders.js';

export interface Target {
  address: string;
  port: number;
}

/** Resolves with null when the check passes, or why it failed. */
export type Probe = (target: Target, timeoutMs: number) => Promise<string | null>;

export const CHECKED_TYPES = ['UDP-CONNECT', 'TCP', 'PING', 'HTTP'] as const;

export const udpConnect: Probe = ({ address, port }, timeoutMs) =>
  new Promise((resolve) => {
    const socket = createSocket(ipVersion(address) === 6 ? 'udp6' : 'udp4');
    let timers: NodeJS.Timeout[] = [];
    const done = (why: string | null) => {
      for (const t of timers) clearTimeout(t);
      timers = [];
      socket.removeAllListeners();
      socket.on('error', () => undefined);
      socket.close();
      resolve(why);
    };
    socket.on('error', (e: NodeJS.ErrnoException) => done(e.code === 'ECONNREFUSED' ? 'port unreachable' : `${e.code ?? e.message}`));
    socket.on('message', () => done(null));
    socket.connect(port, address, () => {
      // A second datagram halfway: an ICMP error the kernel rate-limited away for the first may come for it.
      const send = () => socket.send(Buffer.alloc(0), (e) => e && done(e.message));
      send();
      timers = [setTimeout(send, timeoutMs / 2), setTimeout(() => done(null), timeoutMs)];
    });
  });

export const tcpConnect: Probe = ({ address, port }, timeoutMs) =>
  new Promise((resolve) => {
    const socket = connect({ host: address, port, timeout: timeoutMs });
    socket.on('connect', () => {
      socket.destroy();
      resolve(null);
    });
    socket.on('timeout', () => socket.destroy(new Error('timed out')));
    socket.on('error', (e) => resolve(e.message));
  });

export const ping: Probe = ({ address }, timeoutMs) =>
  new Promise((resolve) => {
    const seconds = String(Math.max(1, Math.ceil(timeoutMs / 1000)));
    execFile('ping', ['-n', '-q', '-c', '1', '-W', seconds, address], { timeout: timeoutMs + 2_000 }, (e, _stdout, stderr) =>
      resolve(e ? `no echo reply${stderr.trim() ? ` (${stderr.trim().split('\n')[0]})` : ''}` : null),
    );
  });

/** Octavia's expected_codes as a predicate on a status code. */
function expectedStatus(field: string, codes: string): (status: number) => boolean {
  const ranges = enc.expectedCodes(field, codes).split(',').map((item) => item.split('-').map(Number) as [number, number?]);
  return (status) => ranges.some(([low, high]) => status >= low && status <= (high ?? low));
}

export function httpProbe(monitor: MonitorConfig): Probe {
  const field = (name: string) => `health monitor ${JSON.stringify(monitor.id)} ${name}`;
  const method = enc.oneOf(field('http_method'), monitor.httpMethod ?? HealthMonitorDefaults.http_method, HttpMethod as readonly string[]);
  const path = monitor.urlPath ?? HealthMonitorDefaults.url_path;
  if (!isUrlPath(path)) throw new RenderError(field('url_path'), path, 'is not a URL path');
  const accepts = expectedStatus(field('expected_codes'), monitor.expectedCodes ?? HealthMonitorDefaults.expected_codes);
  const host = monitor.domainName === null ? null : enc.domainName(field('domain_name'), monitor.domainName);
  return ({ address, port }, timeoutMs) =>
    new Promise((resolve) => {
      const req = request({ host: address, port, method, path, headers: host ? { host } : {}, timeout: timeoutMs, agent: false }, (res) => {
        res.resume();
        resolve(accepts(res.statusCode ?? 0) ? null : `status ${res.statusCode}`);
      });
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', (e) => resolve(e.message));
      req.end();
    });
}

/** The probe of a monitor, or a RenderError for a type the agent does not check. */
export function probeOf(monitor: MonitorConfig): Probe {
  switch (monitor.type) {
    case 'UDP-CONNECT':
      return udpConnect;
    case 'TCP':
      return tcpConnect;
    case 'PING':
      return ping;
    case 'HTTP':
      return httpProbe(monitor);
    default:
      throw new RenderError(`health monitor ${JSON.stringify(monitor.id)} type`, monitor.type, `is not checked on UDP pools (only ${CHECKED_TYPES.join(', ')})`);
  }
}

const MIN_DELAY_MS = 1_000;

/** One member's checks, with HAProxy's rise and fall. */
class MemberCheck {
  up = true;
  private successes = 0;
  private failures = 0;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    readonly key: string,
    private readonly probe: Probe,
    private readonly target: Target,
    private readonly monitor: MonitorConfig,
    private readonly changed: (up: boolean, why: string | null) => void,
  ) {
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (!this.stopped) this.timer = setTimeout(() => void this.check(), ms);
  }

  private async check(): Promise<void> {
    const startedAt = Date.now();
    const why = await this.probe(this.target, Math.max(1, this.monitor.timeout) * 1000);
    if (this.stopped) return;
    if (why === null) {
      this.failures = 0;
      if (!this.up && ++this.successes >= this.monitor.maxRetries) this.flip(true, null);
    } else {
      this.successes = 0;
      if (this.up && ++this.failures >= this.monitor.maxRetriesDown) this.flip(false, why);
    }
    this.schedule(Math.max(0, startedAt + Math.max(MIN_DELAY_MS, this.monitor.delay * 1000) - Date.now()));
  }

  private flip(up: boolean, why: string | null): void {
    this.up = up;
    this.successes = 0;
    this.failures = 0;
    this.changed(up, why);
  }
}

interface WantedCheck {
  key: string;
  probe: Probe;
  target: Target;
  monitor: MonitorConfig;
}

/**
 * By member id, the checks `pools` ask for: one per enabled member of a pool with an enabled
 * monitor. Throws a RenderError for a monitor or target it cannot check, so a config is refused
 * before anything changes.
 */
export function checksOf(pools: readonly PoolConfig[]): Map<string, WantedCheck> {
  const wanted = new Map<string, WantedCheck>();
  for (const pool of pools) {
    const monitor = pool.monitor;
    if (!monitor?.enabled) continue;
    const probe = probeOf(monitor);
    for (const member of pool.members.filter((m) => m.enabled)) {
      const field = (name: string) => `member ${JSON.stringify(member.id)} ${name}`;
      const target = {
        address: enc.ipAddress(field('monitor_address'), member.monitorAddress ?? member.address),
        port: Number(enc.integer(field('monitor_port'), member.monitorPort ?? member.port, 1, 65535)),
      };
      wanted.set(member.id, { key: JSON.stringify([monitor, target]), probe, target, monitor });
    }
  }
  return wanted;
}

/** The monitored members of `pools`: one check per enabled member of a pool with an enabled monitor. */
export class HealthChecks {
  private readonly checks = new Map<string, MemberCheck>();

  constructor(private readonly opts: { onChange(): void; log: Pick<Console, 'info'> }) {}

  /** Whether the member is checked, and then whether it is up. */
  state(memberId: string): 'unchecked' | 'up' | 'down' {
    const check = this.checks.get(memberId);
    return check ? (check.up ? 'up' : 'down') : 'unchecked';
  }

  /** Members that failed their checks: false, by id. */
  health(): Map<string, boolean> {
    return new Map([...this.checks].map(([id, c]) => [id, c.up]));
  }

  /** Checks exactly the members `checksOf(pools)` names; a member whose monitor and target are as before keeps its state. */
  update(pools: readonly PoolConfig[]): void {
    const wanted = checksOf(pools);
    for (const [id, check] of this.checks)
      if (wanted.get(id)?.key !== check.key) {
        check.stop();
        this.checks.delete(id);
      }
    for (const [id, w] of wanted) {
      if (this.checks.has(id)) continue;
      const check: MemberCheck = new MemberCheck(w.key, w.probe, w.target, w.monitor, (up, why) => {
        this.opts.log.info(`UDP member ${id} is ${up ? 'UP' : `DOWN: ${why}`}`);
        this.opts.onChange();
      });
      this.checks.set(id, check);
    }
  }

  stop(): void {
    for (const check of this.checks.values()) check.stop();
    this.checks.clear();
  }
}
