/**
 * Applies pushed configs to this amphora's HAProxy, one at a time.
 *
 * Versions make pushes idempotent: an older version is refused (409), the applied version
 * again is a no-op ('unchanged'), the same version with other content is refused (409).
 * A new version's TLS files are written to the TLS directory, then it is rendered and checked
 * with `haproxy -c`; a refusal (400) leaves the running config alone and puts the previous
 * TLS files back. Then the rendered file is written — it is the truth the next reload and the
 * next agent start use — and applied:
 *   - 'runtime' when only members and listeners' TLS file contents changed: the runtime API
 *     adds, removes, re-weights and enables/disables servers and swaps certificates, CA
 *     bundles and CRLs without a reload; if HAProxy refuses any command, the file is reloaded
 *     instead;
 *   - 'reload' otherwise: a hitless master-worker reload, or the first start.
 * If HAProxy cannot load the new file (e.g. a port taken by another process, which `-c`
 * cannot see), the previous file is put back and the previous config keeps serving (500).
 *
 * A config with a `vrrp` section (ACTIVE_STANDBY) also has keepalived.conf rendered and checked with
 * the HAProxy file (400 if refused), and put in force once HAProxy serves the new config (./keepalived/).
 *
 * The agent adds one thing of its own to what is pushed: the TLS-ALPN-01 relay, rendered while a
 * validation is under way (setTlsAlpn01Answering), and reloaded in and out like any change.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { AmphoraConfig } from '../domain/amphora-config.js';
import { writeFileAtomically } from './atomic-file.js';
import { RenderError } from './haproxy/encoders.js';
import { HaproxyError, type HaproxyProcess } from './haproxy/process.js';
import { renderedBackends, renderHaproxyConfig, rendersTlsAlpn01, type RenderOptions } from './haproxy/render.js';
import { serverName } from './haproxy/names.js';
import { violations } from './typed-check.js';
import { runtimeChanges, type RuntimeChanges } from './diff.js';
import { renderPaths, type AgentLayout } from './layout.js';
import { tlsFiles } from './haproxy/tls-files.js';
import { TlsStore } from './tls-store.js';
import { OneAtATime } from './one-at-a-time.js';
import { VrrpRefused, type Vrrp } from './keepalived/vrrp.js';
import type { UdpBalancer } from './udp/udp-balancer.js';

export type AppliedHow = 'reload' | 'runtime' | 'unchanged';

export interface ApplyResult {
  version: number;
  applied: AppliedHow;
}

/** A push the agent did not apply; `status` is the HTTP status the API answers with. */
export class ApplyError extends Error {
  constructor(
    readonly status: 400 | 409 | 500,
    message: string,
    readonly details: string | null = null,
  ) {
    super(message);
  }
}

export interface ConfigApplierOptions {
  amphoraId: string;
  layout: AgentLayout;
  haproxy: HaproxyProcess;
  maxconn: number;
  /** keepalived for ACTIVE_STANDBY; without it, a config with `vrrp` is refused. */
  vrrp?: Vrrp;
  log: Pick<Console, 'info' | 'warn' | 'error'>;
  /** UDP listeners (nftables, not HAProxy): applied before HAProxy, put back if HAProxy fails. */
  udp?: UdpBalancer;
}

export class ConfigApplier {
  private current: AmphoraConfig | null = null;
  private readonly turns = new OneAtATime();
  private readonly tls: TlsStore;
  private tlsAlpn01Answering = false;

  constructor(private readonly opts: ConfigApplierOptions) {
    this.tls = new TlsStore(opts.layout.tlsDir);
  }

  get applied(): AmphoraConfig | null {
    return this.current;
  }

  /** 0 until a config is applied. */
  get version(): number {
    return this.current?.version ?? 0;
  }

  /** Whether the running HAProxy answers TLS-ALPN-01 (its relay rendered, the crt-list loaded). */
  get rendersTlsAlpn01(): boolean {
    return this.current !== null && this.opts.haproxy.running && rendersTlsAlpn01(this.current, this.renderOptions());
  }

  /**
   * Renders the TLS-ALPN-01 relay in (a validation starts) or out (the last one ended) and reloads
   * when that changes the file; before any config is applied it is only remembered, for the first.
   */
  setTlsAlpn01Answering(on: boolean): Promise<AppliedHow> {
    return this.turns.run(async () => {
      const was = this.tlsAlpn01Answering;
      this.tlsAlpn01Answering = on;
      const config = this.current;
      const file = this.opts.layout.haproxy.config;
      if (!config || !this.opts.haproxy.running || !existsSync(file)) return 'unchanged';
      const previousText = readFileSync(file, 'utf8');
      try {
        const text = this.render(config);
        if (text === previousText) return 'unchanged';
        const refusal = await this.opts.haproxy.validate(text);
        if (refusal !== null) throw new ApplyError(500, `haproxy refused the configuration ${on ? 'with' : 'without'} the TLS-ALPN-01 relay`, refusal);
        writeFileAtomically(file, text);
        return await this.reload();
      } catch (e) {
        this.tlsAlpn01Answering = was;
        if (readFileSync(file, 'utf8') !== previousText) await this.restoreFile(previousText);
        if (e instanceof HaproxyError) throw new ApplyError(500, e.message, e.output);
        throw e;
      }
    });
  }

  /** Validates `candidate` and applies it (see the module comment). */
  apply(candidate: unknown): Promise<ApplyResult> {
    const problems = violations(AmphoraConfig, candidate);
    if (problems.length) return Promise.reject(new ApplyError(400, 'invalid amphora configuration', problems.join('\n')));
    const config = candidate as AmphoraConfig;
    if (config.amphoraId !== this.opts.amphoraId)
      return Promise.reject(new ApplyError(409, `the configuration is for amphora ${config.amphoraId}, this is amphora ${this.opts.amphoraId}`));
    return this.turns.run(() => this.applyValid(config));
  }

  /**
   * Runs the config the previous agent applied, rendered anew; called once at agent start.
   * A stored config this renderer refuses is dropped: the controller sees version 0 and pushes again.
   */
  async restore(): Promise<void> {
    const { appliedConfig } = this.opts.layout;
    if (!existsSync(appliedConfig)) return;
    let stored: unknown;
    try {
      stored = JSON.parse(readFileSync(appliedConfig, 'utf8'));
    } catch (e) {
      this.opts.log.error(`ignoring ${appliedConfig}: ${(e as Error).message}`);
      return;
    }
    try {
      await this.apply(stored);
      this.opts.log.info(`re-applied config version ${this.version}`);
    } catch (e) {
      const failure = e as ApplyError;
      this.opts.log.error(`cannot re-apply ${appliedConfig}: ${failure.message}${failure.details ? `\n${failure.details}` : ''}`);
    }
  }

  private async applyValid(config: AmphoraConfig): Promise<ApplyResult> {
    const previous = this.current;
    if (previous && config.version < previous.version)
      throw new ApplyError(409, `configuration version ${config.version} is older than the applied version ${previous.version}`);
    if (previous && config.version === previous.version) {
      if (isDeepStrictEqual(config, previous)) return { version: config.version, applied: 'unchanged' };
      throw new ApplyError(409, `configuration version ${config.version} is applied already, with different content`);
    }
    const text = this.render(config);
    const keepalived = await this.prepareVrrp(config);
    const udp = this.opts.udp;
    const udpApplied = await this.applyUdp(config);
    const running = this.opts.haproxy.running;
    const changes = previous && running ? runtimeChanges(previous, config) : null;
    const files = tlsFiles(config);
    const restoreTls = this.tls.write(files);
    // `haproxy -c` (tens of ms of CPU) guards reloads only: a bad file would leave the master in wait mode. A first
    // start checks the file by starting and leaves nothing running when it fails; member-only changes go through the
    // runtime API, which checks each server itself, and are checked only if a reload must finish the job.
    const check = async () => {
      if (!running) return;
      const refusal = await this.opts.haproxy.validate(text);
      if (refusal !== null) throw new ApplyError(400, 'haproxy refused the configuration', refusal);
    };
    const restoreUdp = async () => {
      if (udp) await udp.apply(previous ?? { ...config, listeners: [] }).catch((e: Error) => this.opts.log.error(`UDP listeners not put back: ${e.message}`));
    };
    try {
      if (!changes) await check();
    } catch (e) {
      restoreTls();
      await restoreUdp();
      throw e;
    }

    const file = this.opts.layout.haproxy.config;
    const previousText = existsSync(file) ? readFileSync(file, 'utf8') : null;
    writeFileAtomically(file, text);
    let applied: AppliedHow;
    try {
      if (changes && (await this.applyAtRuntime(changes, config, text))) applied = 'runtime';
      else {
        if (changes) await check();
        applied = await this.reload();
      }
    } catch (e) {
      restoreTls();
      await restoreUdp();
      await this.restoreFile(previousText);
      if (e instanceof HaproxyError) throw new ApplyError(500, e.message, e.output);
      throw e;
    }
    if (applied === 'runtime' && udpApplied === 'reload') applied = 'reload';
    this.current = config;
    // Holds private keys: owner-only, as the TLS directory.
    writeFileAtomically(this.opts.layout.appliedConfig, JSON.stringify(config), 0o600);
    this.tls.prune(files);
    try {
      await this.opts.vrrp?.apply(config, keepalived);
    } catch (e) {
      throw new ApplyError(500, `haproxy serves configuration version ${config.version}, but keepalived did not take it (the agent keeps restarting it): ${(e as Error).message}`);
    }
    return { version: config.version, applied };
  }

  private async prepareVrrp(config: AmphoraConfig): Promise<string | null> {
    if (!this.opts.vrrp) {
      if (config.vrrp) throw new ApplyError(400, 'this agent runs no keepalived: it cannot be half of an ACTIVE_STANDBY pair');
      return null;
    }
    try {
      return await this.opts.vrrp.prepare(config);
    } catch (e) {
      if (e instanceof RenderError) throw new ApplyError(400, 'the VRRP configuration cannot be rendered', e.message);
      if (e instanceof VrrpRefused) throw new ApplyError(400, e.message, e.output);
      throw e;
    }
  }

  private render(config: AmphoraConfig): string {
    try {
      return renderHaproxyConfig(config, renderPaths(this.opts.layout), this.renderOptions());
    } catch (e) {
      if (e instanceof RenderError) throw new ApplyError(400, 'the configuration cannot be rendered', e.message);
      throw e;
    }
  }

  private renderOptions(): RenderOptions {
    return { maxconn: this.opts.maxconn, tlsAlpn01Answering: this.tlsAlpn01Answering };
  }

  /** The UDP table first: a config it cannot render is refused (400) and one nft refuses fails (500) before HAProxy is touched. */
  private async applyUdp(config: AmphoraConfig): Promise<AppliedHow> {
    const udp = this.opts.udp;
    if (!udp) return 'unchanged';
    try {
      udp.check(config);
      return await udp.apply(config);
    } catch (e) {
      if (e instanceof RenderError) throw new ApplyError(400, 'the UDP listeners cannot be rendered', e.message);
      throw new ApplyError(500, 'the UDP listeners were not applied', (e as Error).message);
    }
  }

  private async reload(): Promise<'reload'> {
    await this.opts.haproxy.reload();
    return 'reload';
  }

  /** The previous file back in place; with none, HAProxy has nothing to run and is stopped. */
  private async restoreFile(previousText: string | null): Promise<void> {
    const file = this.opts.layout.haproxy.config;
    if (previousText !== null) writeFileAtomically(file, previousText);
    else {
      rmSync(file, { force: true });
      await this.opts.haproxy.stop();
    }
  }

  /** True when every change went through; false (after logging why) when a reload must finish the job. */
  private async applyAtRuntime(changes: RuntimeChanges, config: AmphoraConfig, text: string): Promise<boolean> {
    const runtime = this.opts.haproxy.runtime;
    const servers = serverLines(text);
    try {
      for (const file of changes.tlsFiles) await runtime.updateSslFile(file.kind, this.tls.path(file.name), file.pem);
      for (const change of changes.members) {
        for (const { name: backend } of renderedBackends(config).filter((b) => b.poolId === change.poolId)) {
          const server = serverName(change.kind === 'add' ? change.member.id : change.memberId);
          switch (change.kind) {
            case 'remove':
              await runtime.removeServer(backend, server);
              break;
            case 'add': {
              const line = servers.get(backend)?.get(server);
              if (!line) throw new Error(`no server ${server} in backend ${backend} of the rendered config`);
              await runtime.addServer(backend, server, line.address, line.options.filter((o) => o !== 'disabled'), change.member.enabled);
              break;
            }
            case 'weight':
              await runtime.setWeight(backend, server, change.weight);
              break;
            case 'enabled':
              await runtime.setAdminState(backend, server, change.enabled ? 'ready' : 'maint');
              break;
          }
        }
      }
      return true;
    } catch (e) {
      this.opts.log.warn(`runtime update incomplete, reloading instead: ${(e as Error).message}`);
      return false;
    }
  }
}

/**
 * The `server` lines of a rendered config, by backend and server name: a server added at
 * runtime gets exactly the options the file gives it, so a later reload changes nothing.
 */
function serverLines(text: string): Map<string, Map<string, { address: string; options: string[] }>> {
  const backends = new Map<string, Map<string, { address: string; options: string[] }>>();
  let servers: Map<string, { address: string; options: string[] }> | null = null;
  for (const line of text.split('\n')) {
    if (/^\S/.test(line)) {
      const [keyword, name] = line.split(/\s+/);
      servers = keyword === 'backend' && name ? new Map() : null;
      if (servers) backends.set(name!, servers);
      continue;
    }
    const [keyword, name, address, ...options] = line.trim().split(/\s+/);
    if (servers && keyword === 'server' && name && address) servers.set(name, { address, options });
  }
  return backends;
}
