/**
 * The files of one amphora's directory that the agent owns (the compute driver writes
 * agent.json and the TLS material beside them). Everything is in the directory, so an agent
 * restarted on it picks up where the last one stopped.
 */
import { join } from 'node:path';
import type { HaproxyPaths } from './haproxy/render.js';
import type { HaproxyFiles } from './haproxy/process.js';
import type { VrrpFiles } from './keepalived/vrrp.js';

export interface AgentLayout {
  dir: string;
  haproxy: HaproxyFiles;
  /** keepalived's, for an amphora of an ACTIVE_STANDBY pair. */
  keepalived: VrrpFiles;
  /** The last config applied, as pushed: re-applied when the agent starts. */
  appliedConfig: string;
  /** Heartbeat sequence number and last counters. */
  heartbeatState: string;
  /** Certificates with their keys, CA bundles and CRLs (../haproxy/tls-files.ts): owner-only. */
  tlsDir: string;
  /** ACME HTTP-01 challenges answered on port 80 of the VIP: token → key authorization (./acme-challenges.ts). */
  acmeMap: string;
  /** ACME TLS-ALPN-01 challenge certificates answered on port 443 of the VIP: the crt-list HAProxy loads, and their files (./acme-challenges.ts). */
  acmeAlpnCrtList: string;
  acmeAlpnDir: string;
}

export function agentLayout(dir: string): AgentLayout {
  return {
    dir,
    haproxy: {
      config: join(dir, 'haproxy.cfg'),
      masterSocket: join(dir, 'haproxy-master.sock'),
      statsSocket: join(dir, 'haproxy.sock'),
      pidFile: join(dir, 'haproxy.pid'),
      stateFile: join(dir, 'haproxy.state'),
    },
    keepalived: {
      config: join(dir, 'keepalived.conf'),
      pidFile: join(dir, 'keepalived.pid'),
      vrrpPidFile: join(dir, 'keepalived-vrrp.pid'),
      trackFile: join(dir, 'haproxy-track'),
    },
    appliedConfig: join(dir, 'applied-config.json'),
    heartbeatState: join(dir, 'heartbeat-state.json'),
    tlsDir: join(dir, 'tls'),
    acmeMap: join(dir, 'acme-challenges.map'),
    acmeAlpnCrtList: join(dir, 'acme-tls-alpn-01.crtlist'),
    acmeAlpnDir: join(dir, 'acme-tls-alpn-01'),
  };
}

/**
 * HAProxy binds a unix socket under a temporary name first (`<path>.<pid>.tmp`), so with a
 * 108-byte sun_path it refuses socket paths over 97 bytes ("socket path too long").
 */
export const HAPROXY_SOCKET_PATH_MAX = 97;

/** The longest socket path an amphora under `amphoraeRoot` gets (directories are named by UUID). */
export function longestSocketPath(amphoraeRoot: string): string {
  const { masterSocket, statsSocket } = agentLayout(join(amphoraeRoot, '00000000-0000-0000-0000-000000000000')).haproxy;
  return masterSocket.length >= statsSocket.length ? masterSocket : statsSocket;
}

/** What the renderer writes into haproxy.cfg's global section. */
export function renderPaths(layout: AgentLayout): HaproxyPaths {
  const { stateFile, statsSocket, pidFile } = layout.haproxy;
  return { stateFile, statsSocket, pidFile, tlsDir: layout.tlsDir, acmeMap: layout.acmeMap, acmeAlpnCrtList: layout.acmeAlpnCrtList };
}
