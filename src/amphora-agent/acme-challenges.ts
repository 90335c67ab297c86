/**
 * The ACME challenges this amphora answers at its VIP, each kind kept in a file haproxy.cfg names
 * and, while HAProxy runs, changed in HAProxy's memory too, so a challenge is served without a
 * reload. The file is written first, so a reload or a restarted agent serves the same set; it
 * exists from the agent's start, as HAProxy refuses a configuration naming a missing file.
 *
 * - HTTP-01 on port 80 (AmphoraConfig's acmeHttp01): token → key authorization in a map
 *   (`set map` / `add map` / `del map`).
 * - TLS-ALPN-01 on port 443 (acmeTlsAlpn01): a challenge certificate per name in a crt-list. The
 *   relay that answers it costs every connection to the listener a hop, so it is rendered only
 *   while a name is held: the first name reloads it in (the crt-list loaded with it), the last one
 *   removed reloads it out, and names in between go through the runtime API (`new ssl cert`, its
 *   transaction, `add ssl crt-list`; `del ssl crt-list`, `del ssl cert`).
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { AcmeAlpnCertificate, AcmeChallenge } from '../domain/amphora-config.js';
import { isAcmeDomain } from '../domain/rules/acme.js';
import { writeFileAtomically } from './atomic-file.js';
import type { HaproxyRuntime } from './haproxy/runtime.js';
import { OneAtATime } from './one-at-a-time.js';

/** A few concurrent orders of a load balancer's listeners, a hundred names each at most. */
export const MAX_ACME_CHALLENGES = 1000;

export class AcmeChallengeError extends Error {}

function roomForOneMore(size: number): void {
  if (size >= MAX_ACME_CHALLENGES) throw new AcmeChallengeError(`this amphora answers ${MAX_ACME_CHALLENGES} challenges at most; remove finished ones first`);
}

export class AcmeChallenges {
  private readonly entries = new Map<string, string>();

  constructor(
    private readonly file: string,
    /** HAProxy's runtime API while it runs, else null (the file is read at its next start). */
    private readonly runtime: () => HaproxyRuntime | null,
  ) {
    if (existsSync(file))
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        const [token, keyAuthorization] = line.split(' ');
        if (token && keyAuthorization) this.entries.set(token, keyAuthorization);
      }
    else this.save();
  }

  get size(): number {
    return this.entries.size;
  }

  async set(challenge: AcmeChallenge): Promise<void> {
    if (!this.entries.has(challenge.token)) roomForOneMore(this.entries.size);
    this.entries.set(challenge.token, challenge.keyAuthorization);
    this.save();
    await this.runtime()?.setMapEntry(this.file, challenge.token, challenge.keyAuthorization);
  }

  async remove(token: string): Promise<void> {
    if (!this.entries.delete(token)) return;
    this.save();
    await this.runtime()?.deleteMapEntry(this.file, token);
  }

  private save(): void {
    writeFileAtomically(this.file, [...this.entries].map(([token, keyAuthorization]) => `${token} ${keyAuthorization}\n`).join(''));
  }
}

/** What the TLS-ALPN-01 certificates need of the agent's HAProxy. */
export interface TlsAlpnAnswerer {
  /** HAProxy's runtime API while it runs with the answerer rendered, else null. */
  runtime(): HaproxyRuntime | null;
  /** The relay rendered in or out (a reload when that changes the file). */
  answering(on: boolean): Promise<unknown>;
}

/** TLS-ALPN-01 challenge certificates by name: `<dir>/<name>.pem`, listed in the crt-list the answerer's bind loads. */
export class AcmeAlpnCertificates {
  private readonly names = new Set<string>();
  // One change at a time: a name set while the first one's reload is under way must wait for it to know whether the relay is there.
  private readonly turns = new OneAtATime();

  constructor(
    private readonly crtList: string,
    private readonly dir: string,
    private readonly haproxy: TlsAlpnAnswerer,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (existsSync(crtList))
      for (const line of readFileSync(crtList, 'utf8').split('\n')) {
        const name = /([^/]+)\.pem$/.exec(line.trim())?.[1];
        if (name && isAcmeDomain(name)) this.names.add(name);
      }
    else this.save();
  }

  get size(): number {
    return this.names.size;
  }

  set(name: string, challenge: AcmeAlpnCertificate): Promise<void> {
    return this.turns.run(async () => {
      if (!isAcmeDomain(name)) throw new AcmeChallengeError(`'${name}' is not a DNS name an ACME server validates`);
      const known = this.names.has(name);
      if (!known) roomForOneMore(this.names.size);
      const file = this.file(name);
      writeFileAtomically(file, challenge.certificate);
      this.names.add(name);
      this.save();
      // A relay already rendered takes the certificate at run time; else its reload loads the list.
      const runtime = this.haproxy.runtime();
      if (runtime) await runtime.putCrtListCertificate(this.crtList, file, challenge.certificate, known);
      else await this.haproxy.answering(true);
    });
  }

  remove(name: string): Promise<void> {
    return this.turns.run(async () => {
      if (!this.names.delete(name)) return;
      this.save();
      if (this.names.size === 0) await this.haproxy.answering(false);
      else await this.haproxy.runtime()?.removeCrtListCertificate(this.crtList, this.file(name));
      rmSync(this.file(name), { force: true });
    });
  }

  private file(name: string): string {
    return join(this.dir, `${name}.pem`);
  }

  private save(): void {
    writeFileAtomically(this.crtList, [...this.names].map((name) => `${this.file(name)}\n`).join(''));
  }
}
