/**
 * The controller's client for an amphora that has no agent (compute.driver noop), as Octavia's
 * amphora_noop_driver: every call succeeds at once and changes nothing. It keeps nothing either,
 * so the certificates and configurations it is handed (which hold private keys) go nowhere.
 */
import type { AmphoraConfig } from '../domain/amphora-config.js';
import type { AgentApi, AgentInfo, ApplyResult } from './client.js';

/** What a no-op amphora says it runs in place of an agent and HAProxy version. */
const NOOP_AGENT_VERSION = 'none (no-op amphora)';

export class NoopAgentClient implements AgentApi {
  constructor(readonly amphoraId: string) {}

  async info(): Promise<AgentInfo> {
    return { amphoraId: this.amphoraId, apiVersion: NOOP_AGENT_VERSION, haproxyVersion: NOOP_AGENT_VERSION, configVersion: 0 };
  }

  /** Reports the version as taken, so the amphora row records it, with nothing applied. */
  async putConfig(config: AmphoraConfig): Promise<ApplyResult> {
    return { version: config.version, applied: 'none' };
  }

  waitReady(): Promise<AgentInfo> {
    return this.info();
  }

  async putCertificate(): Promise<void> {}

  async putAcmeChallenge(): Promise<void> {}

  async deleteAcmeChallenge(): Promise<void> {}

  async putAcmeAlpnCertificate(): Promise<void> {}

  async deleteAcmeAlpnCertificate(): Promise<void> {}

  close(): void {}
}
