/**
 * One amphora agent process (`ostia agent --dir DIR`): reads DIR/agent.json, re-applies the
 * config the previous agent left (so HAProxy, and keepalived for an ACTIVE_STANDBY amphora, serve
 * again before anyone asks), opens the mTLS management API, sends heartbeats, and on SIGTERM/SIGINT
 * stops them all, keepalived first so the peer takes the VIP before HAProxy goes.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import pino from 'pino';
import type { AgentBootConfig } from '../compute/compute-driver.js';
import { HaproxyProcess } from './haproxy/process.js';
import { withoutCapabilities } from './capabilities.js';
import { Vrrp } from './keepalived/vrrp.js';
import { HeartbeatSender } from './heartbeat.js';
import { violations } from './typed-check.js';
import { ConfigApplier } from './apply.js';
import { agentLayout } from './layout.js';
import { buildAgentServer } from './server.js';
import { AcmeAlpnCertificates, AcmeChallenges } from './acme-challenges.js';
import { UdpBalancer } from './udp/udp-balancer.js';

const BootConfigSchema = Type.Object({
  amphoraId: Type.String({ format: 'uuid' }),
  managementAddress: Type.String({ minLength: 1 }),
  agentPort: Type.Integer({ minimum: 1, maximum: 65535 }),
  certFile: Type.String({ minLength: 1 }),
  keyFile: Type.String({ minLength: 1 }),
  clientCaFile: Type.String({ minLength: 1 }),
  heartbeat: Type.Object({
    key: Type.String({ minLength: 1 }),
    targets: Type.Array(Type.String(), { minItems: 1 }),
    intervalMs: Type.Integer({ minimum: 10 }),
  }),
  haproxyBinary: Type.String({ minLength: 1 }),
  maxconn: Type.Integer({ minimum: 1 }),
});
// The compute driver writes the file from its own type: this fails to compile if the two drift apart.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const schemaIsBootConfig: Same<Static<typeof BootConfigSchema>, AgentBootConfig> = true;
void schemaIsBootConfig;

/** A problem with agent.json, reported without a stack trace. */
export class BootConfigError extends Error {}

export function readBootConfig(dir: string): AgentBootConfig {
  const file = join(dir, 'agent.json');
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new BootConfigError(`cannot read ${file}: ${(e as Error).message}`);
  }
  // Only paths and field names are reported: the file holds the heartbeat key.
  const problems = violations(BootConfigSchema, parsed).map((line) => line.split(':')[0]);
  if (problems.length) throw new BootConfigError(`${file} is not an agent configuration (check ${[...new Set(problems)].join(', ')})`);
  return parsed as AgentBootConfig;
}

export interface RunningAgent {
  url: string;
  stop(): Promise<void>;
}

/** Starts everything; resolves once the API listens. */
export async function startAgent(dirArgument: string, log: pino.Logger): Promise<RunningAgent> {
  const dir = resolve(dirArgument);
  const boot = readBootConfig(dir);
  const layout = agentLayout(dir);
  const say = {
    info: (message: string) => log.info(message),
    warn: (message: string) => log.warn(message),
    error: (message: string) => log.error(message),
  };
  const haproxy = new HaproxyProcess({ binary: boot.haproxyBinary, launcher: withoutCapabilities(), files: layout.haproxy, log: say });
  const haproxyVersion = await haproxy.version().catch((e: Error) => {
    throw new BootConfigError(`cannot run haproxyBinary '${boot.haproxyBinary}': ${e.message}`);
  });
  const vrrp = new Vrrp({ files: layout.keepalived, haproxyRunning: () => haproxy.running, statsSocket: layout.haproxy.statsSocket, log: say });
  const udp = new UdpBalancer(say);
  const applier = new ConfigApplier({ amphoraId: boot.amphoraId, layout, haproxy, vrrp, maxconn: boot.maxconn, log: say, udp });
  // Before the restored configuration starts HAProxy: it may name the map.
  const acmeChallenges = new AcmeChallenges(layout.acmeMap, () => (haproxy.running && applier.applied?.acmeHttp01 ? haproxy.runtime : null));
  const acmeAlpnCertificates = new AcmeAlpnCertificates(layout.acmeAlpnCrtList, layout.acmeAlpnDir, {
    runtime: () => (applier.rendersTlsAlpn01 ? haproxy.runtime : null),
    answering: (on) => applier.setTlsAlpn01Answering(on),
  });
  // Names a previous agent held when it stopped: their validation may still be under way.
  if (acmeAlpnCertificates.size > 0) await applier.setTlsAlpn01Answering(true);
  await applier.restore();

  const heartbeat = new HeartbeatSender({
    amphoraId: boot.amphoraId,
    key: boot.heartbeat.key,
    targets: boot.heartbeat.targets,
    intervalMs: boot.heartbeat.intervalMs,
    stateFile: layout.heartbeatState,
    readStats: async () => (haproxy.running ? haproxy.runtime.showStat() : null),
    readOtherStatus: () => udp.status(),
    configVersion: () => applier.version,
    log: say,
  });
  const server = buildAgentServer({
    amphoraId: boot.amphoraId,
    tls: { certFile: boot.certFile, keyFile: boot.keyFile, clientCaFile: boot.clientCaFile },
    applier,
    haproxy,
    haproxyVersion,
    acmeChallenges,
    acmeAlpnCertificates,
    logger: log,
  });
  try {
    await server.listen({ host: boot.managementAddress, port: boot.agentPort });
  } catch (e) {
    await vrrp.stop();
    udp.stop();
    await haproxy.stop();
    throw e;
  }
  heartbeat.start();
  const host = boot.managementAddress.includes(':') ? `[${boot.managementAddress}]` : boot.managementAddress;
  return {
    url: `https://${host}:${boot.agentPort}`,
    async stop() {
      heartbeat.stop();
      udp.stop();
      await server.close();
      // The VIP goes to the peer before this HAProxy stops serving it.
      await vrrp.stop();
      await haproxy.stop();
    },
  };
}
