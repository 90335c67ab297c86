/**
 * The controller's side of the management plane: HTTPS with mutual TLS to one amphora's
 * agent. The chain must end at the server CA AND the certificate must name this amphora:
 * every agent holds a cert from the same CA, so chain validation alone would let one
 * amphora answer for another (Octavia checks the hostname = amphora id for this reason).
 */
import https from 'node:https';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AmphoraConfig } from '../domain/amphora-config.js';

export interface AgentClientOptions {
  /** `https://<management address>:<agent port>` */
  url: string;
  amphoraId: string;
  serverCaPem: string;
  clientCertPem: string;
  clientKeyPem: string;
  /** Per request; default 10 s. */
  timeoutMs?: number;
}

export interface AgentInfo {
  amphoraId: string;
  apiVersion: string;
  haproxyVersion: string;
  configVersion: number;
  /** Whether the amphora holds its VIPs (null before a configuration; absent from agents before migrations). */
  vipHeld?: boolean | null;
}

export interface ApplyResult {
  version: number;
  /**
   * How the agent applied it: a hitless reload, runtime-API commands only, or nothing (same version);
   * `none` from the no-op client (compute.driver noop), where no agent exists to apply anything.
   */
  applied: 'reload' | 'runtime' | 'unchanged' | 'none';
}

/** The agent answered with an error status; `agentMessage`/`details` are its `{error, details}`. */
export class AgentHttpError extends Error {
  constructor(
    readonly status: number,
    readonly agentMessage: string,
    readonly details: string | null,
    request: string,
  ) {
    // The flow records `message` in the trace, so it carries the details (e.g. `haproxy -c` output) too.
    super(`${request} failed with ${status}: ${agentMessage}${details ? `\n${details}` : ''}`);
    this.name = 'AgentHttpError';
  }
}

/** No usable answer: not listening yet, reset, timed out, or the TLS peer is not who it must be. */
export class AgentConnectionError extends Error {
  constructor(
    message: string,
    readonly code: string,
    /** Worth retrying while an amphora boots; TLS identity and chain failures are not. */
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'AgentConnectionError';
  }
}

const API = '/1.0';
const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 1_000;
const IDENTITY_ERROR = 'ERR_AMPHORA_IDENTITY';
/** Transport failures that mean "the agent is not (yet) there", as opposed to "it is the wrong agent". */
const TRANSIENT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'ETIMEDOUT', 'ETIMEOUT']);

/** The agent calls the flows and housekeeping make. */
export type AgentApi = Pick<AgentClient, 'info' | 'putConfig' | 'waitReady' | 'putCertificate' | 'putAcmeChallenge' | 'deleteAcmeChallenge' | 'putAcmeAlpnCertificate' | 'deleteAcmeAlpnCertificate' | 'close'>;

export class AgentClient {
  private readonly agent: https.Agent;
  private readonly target: URL;
  private readonly timeoutMs: number;
  readonly amphoraId: string;

  constructor(opts: AgentClientOptions) {
    this.target = new URL(opts.url);
    if (this.target.protocol !== 'https:') throw new Error(`agent url must be https://…, got ${opts.url}`);
    this.amphoraId = opts.amphoraId;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.agent = new https.Agent({
      keepAlive: true,
      ca: opts.serverCaPem,
      cert: opts.clientCertPem,
      key: opts.clientKeyPem,
      rejectUnauthorized: true,
      minVersion: 'TLSv1.2',
      servername: opts.amphoraId,
      checkServerIdentity: (_host, cert) => this.checkIdentity(cert),
    });
  }

  info(signal?: AbortSignal): Promise<AgentInfo> {
    return this.call('GET', '/info', undefined, signal);
  }

  /** 200 also when the version is already applied (`unchanged`); 409 when it is older. */
  putConfig(config: AmphoraConfig, signal?: AbortSignal): Promise<ApplyResult> {
    return this.call('PUT', '/config', config, signal);
  }

  getConfig(signal?: AbortSignal): Promise<AmphoraConfig> {
    return this.call('GET', '/config', undefined, signal);
  }

  /** The agent's current counters; their shape is the agent's (see src/amphora-agent). */
  stats(signal?: AbortSignal): Promise<unknown> {
    return this.call('GET', '/stats', undefined, signal);
  }

  /** Rotation: `pem` is the new server certificate followed by its private key. */
  async putCertificate(pem: string, signal?: AbortSignal): Promise<void> {
    await this.call('PUT', '/certificate', { pem }, signal);
  }

  /** Port 80 of the VIP answers `token` with `keyAuthorization` (ACME HTTP-01) until deleteAcmeChallenge. */
  async putAcmeChallenge(token: string, keyAuthorization: string, signal?: AbortSignal): Promise<void> {
    await this.call('PUT', `/acme-challenges/${encodeURIComponent(token)}`, { keyAuthorization }, signal);
  }

  async deleteAcmeChallenge(token: string, signal?: AbortSignal): Promise<void> {
    await this.call('DELETE', `/acme-challenges/${encodeURIComponent(token)}`, undefined, signal);
  }

  /** Port 443 of the VIP presents `certificate` (PEM, with its key) to ACME TLS-ALPN-01 validation of `name` until deleteAcmeAlpnCertificate. */
  async putAcmeAlpnCertificate(name: string, certificate: string, signal?: AbortSignal): Promise<void> {
    await this.call('PUT', `/acme-tls-alpn-01/${encodeURIComponent(name)}`, { certificate }, signal);
  }

  async deleteAcmeAlpnCertificate(name: string, signal?: AbortSignal): Promise<void> {
    await this.call('DELETE', `/acme-tls-alpn-01/${encodeURIComponent(name)}`, undefined, signal);
  }

  /**
   * Asks /info until the agent answers, the absolute `deadlineMs` (ms since the epoch, as
   * Date.now()) passes, or `signal` aborts. A booting agent gives no event to wait for, so
   * this is the one place that sleeps between attempts. Identity or chain failures and
   * error statuses other than 503 are final at once: retrying would only hide them.
   */
  async waitReady(signal: AbortSignal, deadlineMs: number): Promise<AgentInfo> {
    let pause = FIRST_RETRY_MS;
    let telling: unknown;
    for (let attempt = 1; ; attempt++) {
      const timeoutMs = Math.max(1, Math.min(this.timeoutMs, deadlineMs - Date.now()));
      try {
        return await this.call<AgentInfo>('GET', '/info', undefined, signal, timeoutMs);
      } catch (e) {
        if (!isTransient(e)) throw e;
        // An attempt the deadline cut short says less than the failure before it.
        const cutShort = timeoutMs < this.timeoutMs && (e as AgentConnectionError).code === 'ETIMEOUT';
        if (!cutShort || telling === undefined) telling = e;
        const left = deadlineMs - Date.now();
        if (left <= 0)
          throw new AgentConnectionError(
            `agent of amphora ${this.amphoraId} at ${this.target.origin} was not ready by the deadline (${attempt} attempts); last error: ${(telling as Error).message}`,
            (telling as AgentConnectionError).code ?? 'ENOTREADY',
            true,
          );
        await sleep(Math.min(pause, left), undefined, { signal });
        pause = Math.min(pause * 2, MAX_RETRY_MS);
      }
    }
  }

  /** Drops the kept-alive connections. */
  close(): void {
    this.agent.destroy();
  }

  private checkIdentity(cert: PeerCertificate): Error | undefined {
    if (!checkServerIdentity(this.amphoraId, cert)) return undefined;
    const names = [cert.subject?.CN && `CN=${cert.subject.CN}`, cert.subjectaltname].filter(Boolean).join(', ') || 'nothing';
    return Object.assign(new Error(`its certificate names ${names}, not amphora ${this.amphoraId}`), { code: IDENTITY_ERROR });
  }

  private call<T>(method: string, path: string, body: unknown, signal: AbortSignal | undefined, timeoutMs = this.timeoutMs): Promise<T> {
    const request = `${method} ${API}${path} on amphora ${this.amphoraId} (${this.target.origin})`;
    const timeout = AbortSignal.timeout(timeoutMs);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise<T>((resolve, reject) => {
      const fail = (e: Error) => reject(signal?.aborted ? signal.reason : transportError(e, request, timeout.aborted ? timeoutMs : null));
      const req = https.request(
        {
          agent: this.agent,
          protocol: 'https:',
          hostname: this.target.hostname.replace(/^\[|\]$/g, ''),
          port: this.target.port || 443,
          method,
          path: API + path,
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
          headers: {
            accept: 'application/json',
            ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_RESPONSE_BYTES) req.destroy(new Error(`response larger than ${MAX_RESPONSE_BYTES} bytes`));
            else chunks.push(chunk);
          });
          res.on('error', fail);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) settleSuccess(text, request, resolve, reject);
            else reject(httpError(status, text, request));
          });
        },
      );
      req.on('error', fail);
      req.end(payload);
    });
  }
}

function settleSuccess<T>(text: string, request: string, resolve: (v: T) => void, reject: (e: Error) => void): void {
  if (text === '') return resolve(undefined as T);
  try {
    resolve(JSON.parse(text) as T);
  } catch {
    reject(new AgentConnectionError(`${request}: the agent answered with something that is not JSON: ${text.slice(0, 200)}`, 'EBADRESPONSE', false));
  }
}

function httpError(status: number, text: string, request: string): AgentHttpError {
  const parsed = parseAgentError(text);
  const message = typeof parsed?.error === 'string' ? parsed.error : text.slice(0, 500) || `HTTP ${status}`;
  const details = parsed?.details === undefined || parsed.details === null ? null : typeof parsed.details === 'string' ? parsed.details : JSON.stringify(parsed.details);
  return new AgentHttpError(status, message, details, request);
}

function parseAgentError(text: string): { error?: unknown; details?: unknown } | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? value : null;
  } catch {
    // Not the agent's JSON (a proxy, or a crash before the handler): the raw text is the best message.
    return null;
  }
}

function transportError(e: Error, request: string, timedOutAfterMs: number | null): AgentConnectionError {
  if (timedOutAfterMs !== null) return new AgentConnectionError(`${request}: no answer within ${timedOutAfterMs} ms`, 'ETIMEOUT', true);
  const code = (e as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
  return new AgentConnectionError(`${request}: ${e.message} (${code})`, code, TRANSIENT_CODES.has(code));
}

function isTransient(e: unknown): boolean {
  if (e instanceof AgentConnectionError) return e.retryable;
  // 503: the agent is up but says it cannot serve yet (e.g. HAProxy still starting).
  return e instanceof AgentHttpError && e.status === 503;
}
