/**
 * AmphoraConfig (its `vrrp` section) → keepalived.conf for keepalived 2.2: one VRRPv3 instance that
 * holds the VIP on the VIP interface, by unicast between the two amphorae of an ACTIVE_STANDBY pair.
 * Every value went through the schema and goes through an encoder here again, so nothing but
 * addresses, numbers, a UUID and an interface name reaches the file.
 *
 * Both amphorae start as BACKUP and never preempt (as Octavia's do): the higher priority takes the
 * VIP first, and an amphora that comes back does not take it back from the one serving it.
 *
 * HAProxy is tracked through a file the agent writes (./haproxy-track.ts), not a `vrrp_script`:
 * keepalived 2.2.7 runs a script only after `setgroups()`, which needs CAP_SETGID, and a non-root
 * keepalived without it has every script "succeed" (the forked child exits 0 when setgroups fails).
 */
import type { AmphoraConfig, VrrpConfig } from '../../domain/amphora-config.js';
import { INTERFACE_NAME_PATTERN } from '../../domain/amphora-config.js';
import { ipVersion } from '../../domain/net.js';
import * as enc from '../haproxy/encoders.js';
import { RenderError } from '../haproxy/encoders.js';

export interface KeepalivedPaths {
  /** Holds 0 while this amphora's HAProxy serves, 1 when it does not. */
  trackFile: string;
}

/** The track_file's name in keepalived.conf. */
const HAPROXY_TRACK = 'haproxy';
/** Gratuitous ARPs / NAs on becoming MASTER: a burst at once, another a second later, then refreshed. */
const GARP = { delaySeconds: 1, repeat: 3, refreshSeconds: 5, refreshRepeat: 2 };

function interfaceName(value: string): string {
  if (!new RegExp(INTERFACE_NAME_PATTERN).test(value)) throw new RenderError('vrrp interface', value, 'is not an interface name');
  return value;
}

/** keepalived reads advert_int in seconds with up to two decimals (VRRPv3 counts centiseconds). */
function advertInterval(ms: number): string {
  const centiseconds = Number(enc.integer('vrrp advert interval', ms / 10, 1, 4095));
  return `${Math.floor(centiseconds / 100)}.${String(centiseconds % 100).padStart(2, '0')}`;
}

/** An address of the VRRP family: VRRPv3 speaks one family per instance. */
function sameFamily(field: string, value: string, family: 4 | 6): string {
  const address = enc.ipAddress(field, value);
  if (ipVersion(address) !== family) throw new RenderError(field, value, `is not an IPv${family} address as the instance's own address is`);
  return address;
}

function vipLines(config: AmphoraConfig, vrrp: VrrpConfig, dev: string): { primary: string; others: string[] } {
  const vip = enc.ipAddress('vip address', config.vip.address);
  const maxPrefix = ipVersion(vip) === 4 ? 32 : 128;
  const prefix = enc.integer('vrrp vip prefix length', vrrp.vipPrefixLength, 1, maxPrefix);
  // Additional VIPs (other subnets, maybe the other family) move with the instance as host addresses.
  const others = [...new Set(config.vip.additional.map((a) => enc.ipAddress('vip additional address', a)))]
    .filter((a) => a !== vip)
    .map((a) => `${a}/${ipVersion(a) === 4 ? 32 : 128} dev ${dev}`);
  return { primary: `${vip}/${prefix} dev ${dev}`, others };
}

/** keepalived.conf for `config`, or null when the amphora is not half of a pair. */
export function renderKeepalivedConfig(config: AmphoraConfig, paths: KeepalivedPaths): string | null {
  const vrrp = config.vrrp;
  if (!vrrp) return null;
  const lb = enc.uuid('load balancer id', config.loadBalancerId);
  const amphora = enc.uuid('amphora id', config.amphoraId);
  const dev = interfaceName(vrrp.interface);
  const own = enc.ipAddress('vrrp address', vrrp.address);
  const family = ipVersion(own) as 4 | 6;
  const peers = [...new Set(vrrp.peers.map((p) => sameFamily('vrrp peer', p, family)))];
  if (peers.includes(own)) throw new RenderError('vrrp peer', own, "is this amphora's own VRRP address");
  const vips = vipLines(config, vrrp, dev);
  const role = enc.oneOf('vrrp role', vrrp.role, ['MASTER', 'BACKUP'] as const);
  const block = (header: string, lines: readonly string[], indent = '') => [`${indent}${header} {`, ...lines.map((l) => `${indent}    ${l}`), `${indent}}`];
  return [
    `# Load balancer ${lb} on amphora ${amphora} (${role}), rendered by Ostia`,
    ...block('global_defs', [`router_id ${amphora}`, 'vrrp_version 3']),
    ...block(`track_file ${HAPROXY_TRACK}`, [
      `file ${enc.absolutePath('track file', paths.trackFile)}`,
      // Any non-zero value puts the instance in FAULT: it gives the VIP up and stops advertising.
      'weight 0',
      // FAULT until the agent has seen HAProxy serve; a file the agent wrote is left as it is.
      'init_file 1',
    ]),
    ...block(`vrrp_instance ${lb}`, [
      'state BACKUP',
      'nopreempt',
      `interface ${dev}`,
      `virtual_router_id ${enc.integer('vrrp virtual router id', vrrp.virtualRouterId, 1, 255)}`,
      `priority ${enc.integer('vrrp priority', vrrp.priority, 1, 254)}`,
      `advert_int ${advertInterval(vrrp.advertIntervalMs)}`,
      `garp_master_delay ${GARP.delaySeconds}`,
      `garp_master_repeat ${GARP.repeat}`,
      ...(vrrp.leaving ? ['garp_master_refresh 0'] : [`garp_master_refresh ${GARP.refreshSeconds}`, `garp_master_refresh_repeat ${GARP.refreshRepeat}`]),
      `unicast_src_ip ${own}`,
      ...block('unicast_peer', peers),
      ...block('virtual_ipaddress', [vips.primary]),
      ...(vips.others.length ? block('virtual_ipaddress_excluded', vips.others) : []),
      ...block('track_file', [HAPROXY_TRACK]),
    ]),
  ].join('\n') + '\n';
}
