/**
 * What the amphora flows act through: compute, network, certificates, the key manager and agent clients. The
 * runtime (the composition root) supplies them behind a loader that opens them on first use,
 * so a process that never runs a flow (an API-only process) opens no CA.
 */
import { AgentClient, type AgentApi } from '../../amphora-client/client.js';
import { NoopAgentClient } from '../../amphora-client/noop-client.js';
import type { ComputeDriver } from '../../compute/compute-driver.js';
import type { Config } from '../../config.js';
import type { NetworkDriver } from '../../network/network-driver.js';
import type { CertificateAuthority } from '../../pki/ca.js';
import type { KeyManager } from '../../keymanager/index.js';

export type { AgentApi };

export interface AmphoraDeps {
  readonly settings: Config['amphora'];
  /**
   * False under compute.driver noop: nothing runs that could bind a VIP or answer a probe, so
   * plug-vip records the VIPs without plugging them, certificates are not probed at the VIP,
   * and operating statuses are left to a health manager that will never hear anything.
   */
  readonly dataPlane: boolean;
  /**
   * Whether the pair of an ACTIVE_STANDBY load balancer can be built: amphorae with network stacks of their
   * own, between which keepalived moves the VIP (compute.driver netns), or rows only (noop).
   */
  readonly activeStandby: boolean;
  readonly compute: ComputeDriver;
  readonly network: NetworkDriver;
  readonly ca: Pick<CertificateAuthority, 'issueAmphoraCert' | 'clientCaPem'>;
  /** Where listeners' and pools' certificate references are read, with the service identity. */
  readonly keyManager: KeyManager;
  /** The directory compute keeps an amphora in (AmphoraSpec.dir). */
  amphoraDir(amphoraId: string): string;
  /** A client of one amphora's agent, checking that it is that amphora; the caller closes it. */
  agent(amphora: { id: string; agentUrl: string }): Promise<AgentApi>;
}

export type AmphoraDepsLoader = () => Promise<AmphoraDeps>;

/** Agent clients that present the controller's certificate and check the amphora's. */
export function agentClients(ca: Pick<CertificateAuthority, 'controllerClientCert' | 'serverCaPem'>): AmphoraDeps['agent'] {
  return async ({ id, agentUrl }) => {
    const client = await ca.controllerClientCert();
    return new AgentClient({ url: agentUrl, amphoraId: id, serverCaPem: ca.serverCaPem, clientCertPem: client.certPem, clientKeyPem: client.keyPem });
  };
}

/** Clients of no agent at all (compute.driver noop), as Octavia's amphora_noop_driver: every call succeeds. */
export const noopAgentClients: AmphoraDeps['agent'] = async ({ id }) => new NoopAgentClient(id);
