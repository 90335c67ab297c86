/**
 * Where the management network meets this machine, per driver: what route the controller must take to an
 * amphora, and which namespaces the management plane's packets cross (each with the hooks they meet there).
 * - compute.driver local: amphorae are processes on loopback addresses; everything happens in this
 *   machine's namespace, on `lo`.
 * - compute.driver netns (network.driver bridge): the controller's veth `ostia-<tag>` holds the management
 *   network's first address; frames cross the fabric namespace's bridge; the amphora has its own namespace.
 */
import type { Config } from '../../config.js';
import { amphoraNamespace, MANAGEMENT_INTERFACE } from '../../linux-net/ip.js';
import { BridgeNetwork } from '../../network/bridge-network/bridge-network.js';
import { NetworkCatalog } from '../../network/catalog.js';
import type { Hook, Packet, Place } from './firewall.js';
import type { RouteSeen } from './agent-probe.js';

export interface Crossing {
  place: Place;
  hooks: readonly Hook[];
  iif: string | null;
  oif: string | null;
}

export interface Flow {
  /** "controller → agent", "agent → controller (replies)", "amphora → health manager (heartbeats)" */
  name: string;
  packet: Omit<Packet, 'iif' | 'oif'>;
  path: Crossing[];
}

export interface ManagementPlane {
  /** The interface this machine must route management addresses through, and what it is. */
  routeDev: string;
  routeWhat: string;
  /** The route a management address must match, for the hint: `127.0.0.0/8 dev lo` or `CIDR dev ostia-… src ADDR`. */
  expectedRoute: string;
  restore: string;
  /** The namespace of an amphora, or null when amphorae share this machine's. */
  amphoraNamespace(amphoraId: string): string | null;
  /** The flows between the controller (from `source`) and the amphora at `address`. */
  flows(amphoraId: string, address: string, source: string, agentPort: number, health: { host: string; port: number }): Flow[];
}

const HOST: Place = { name: "this machine's namespace", netns: null, families: ['ip', 'ip6', 'inet'] };
const OUT: readonly Hook[] = ['output', 'postrouting'];
const IN: readonly Hook[] = ['prerouting', 'input'];
const BRIDGED: readonly Hook[] = ['prerouting', 'forward', 'postrouting'];

export function managementPlane(config: Config): ManagementPlane {
  if (config.compute.driver !== 'netns') {
    // Out of this machine's stack and back in through lo: every packet meets all four hooks here.
    const loop = (): Crossing[] => [
      { place: HOST, hooks: OUT, iif: 'lo', oif: 'lo' },
      { place: HOST, hooks: IN, iif: 'lo', oif: 'lo' },
    ];
    return {
      routeDev: 'lo',
      routeWhat: 'loopback, where compute.driver local runs its amphorae',
      expectedRoute: 'local 127.0.0.0/8 dev lo (table local)',
      restore: `ip route replace local 127.0.0.0/8 dev lo table local`,
      amphoraNamespace: () => null,
      flows: (_id, address, source, agentPort, health) => [
        { name: 'controller → agent', packet: { proto: 'tcp', saddr: source, daddr: address, sport: null, dport: agentPort, state: 'new' }, path: loop() },
        { name: 'agent → controller (replies)', packet: { proto: 'tcp', saddr: address, daddr: source, sport: agentPort, dport: null, state: 'established' }, path: loop() },
        { name: 'amphora → health manager (heartbeats)', packet: { proto: 'udp', saddr: address, daddr: health.host, sport: null, dport: health.port, state: 'new' }, path: loop() },
      ],
    };
  }
  const net = new BridgeNetwork(config.dataDir, config.amphora.managementNetwork, new NetworkCatalog(config.network));
  const fabric: Place = { name: `the fabric namespace ${net.fabric}`, netns: net.fabric, families: ['bridge'] };
  const amphora = (id: string): Place => ({ name: `the amphora's namespace ${amphoraNamespace(net.fabric, id)}`, netns: amphoraNamespace(net.fabric, id), families: ['ip', 'ip6', 'inet'] });
  const toAmphora = (id: string): Crossing[] => [
    { place: HOST, hooks: OUT, iif: null, oif: net.fabric },
    { place: fabric, hooks: BRIDGED, iif: null, oif: null },
    { place: amphora(id), hooks: IN, iif: MANAGEMENT_INTERFACE, oif: null },
  ];
  const fromAmphora = (id: string): Crossing[] => [
    { place: amphora(id), hooks: OUT, iif: null, oif: MANAGEMENT_INTERFACE },
    { place: fabric, hooks: BRIDGED, iif: null, oif: null },
    { place: HOST, hooks: IN, iif: net.fabric, oif: null },
  ];
  const cidr = config.amphora.managementNetwork.cidr;
  return {
    routeDev: net.fabric,
    routeWhat: `${net.fabric}, the controller's veth to the management bridge`,
    expectedRoute: `${cidr} dev ${net.fabric} src ${net.controllerAddress}`,
    restore: `ip route replace ${cidr} dev ${net.fabric} proto kernel scope link src ${net.controllerAddress}`,
    amphoraNamespace: (id) => amphoraNamespace(net.fabric, id),
    flows: (id, address, source, agentPort, health) => [
      { name: 'controller → agent', packet: { proto: 'tcp', saddr: source, daddr: address, sport: null, dport: agentPort, state: 'new' }, path: toAmphora(id) },
      { name: 'agent → controller (replies)', packet: { proto: 'tcp', saddr: address, daddr: source, sport: agentPort, dport: null, state: 'established' }, path: fromAmphora(id) },
      { name: 'amphora → health manager (heartbeats)', packet: { proto: 'udp', saddr: address, daddr: health.host, sport: null, dport: health.port, state: 'new' }, path: fromAmphora(id) },
    ],
  };
}

/** Whether this machine routes the management address the way the driver set up. */
export function routeVerdict(plane: Pick<ManagementPlane, 'routeDev' | 'routeWhat' | 'expectedRoute' | 'restore'>, address: string, seen: RouteSeen | { error: string }): { ok: boolean; detail: string } {
  const check = `check with 'ip route get ${address}'`;
  if ('error' in seen)
    return { ok: false, detail: `management network not routed to the controller: this machine has no route to ${address} (${seen.error}); expected ${plane.expectedRoute}: ${check}, and put it back with '${plane.restore}'.` };
  if (seen.dev === plane.routeDev) return { ok: true, detail: `${address} is routed through ${plane.routeWhat}${seen.prefsrc ? `, from ${seen.prefsrc}` : ''}.` };
  const via = seen.gateway ? `via ${seen.gateway} on ${seen.dev}` : `on ${seen.dev}`;
  return {
    ok: false,
    detail: `management network not routed to the controller: this machine sends ${address} ${via}, not through ${plane.routeWhat}; expected ${plane.expectedRoute}: ${check}, and put it back with '${plane.restore}'.`,
  };
}
