/**
 * One ACME order (RFC 8555) through `acme-client`: the account (its key kept in the data
 * directory's PKI folder, registered once per process), the order, each name's challenge
 * (HTTP-01, or TLS-ALPN-01 of RFC 8737 with the certificate acme-client makes) answered by the
 * load balancer's amphorae, finalization with a new key and the certificate chain. A failed
 * validation is reported in the ACME server's own words.
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Agent } from 'node:https';
import * as acme from 'acme-client';
import type { Config } from '../../../config.js';
import type { AcmeChallengeType } from '../../../domain/rules/acme.js';

export interface IssuedCertificate {
  certificate: string;
  intermediates: string;
  privateKey: string;
  notBefore: string;
  notAfter: string;
}

/** A challenge as the amphorae answer it: HTTP-01's token and key authorization, or TLS-ALPN-01's certificate (PEM, with its key) for a name. */
export type AcmeAnswer = { type: 'http-01'; token: string; keyAuthorization: string } | { type: 'tls-alpn-01'; name: string; certificate: string };

/** Where a challenge is answered: every amphora of the load balancer, at its VIP. */
export interface ChallengeAnswerer {
  /** The one challenge type the load balancer answers (domain/rules/acme.ts's acmeChallengeType). */
  readonly type: AcmeChallengeType;
  put(answer: AcmeAnswer): Promise<void>;
  remove(answer: AcmeAnswer): Promise<void>;
}

/** An order that failed: the message says for which name and why, as the ACME server put it. */
export class AcmeOrderError extends Error {}

// The protocol has no notification: a client polls, and validation takes a few seconds.
const POLL = { backoffAttempts: 12, backoffMin: 300, backoffMax: 5000 };

export class AcmeOrderer {
  private client: Promise<acme.Client> | null = null;

  constructor(
    private readonly settings: Config['acme'],
    private readonly accountKeyFile: string,
  ) {
    // acme-client talks through its own axios instance; a private directory's CA is trusted there only.
    if (settings.caFile) acme.axios.defaults.httpsAgent = new Agent({ ca: readFileSync(settings.caFile) });
  }

  async order(domains: readonly string[], answerer: ChallengeAnswerer): Promise<IssuedCertificate> {
    const client = await this.account();
    const order = await client.createOrder({ identifiers: domains.map((value) => ({ type: 'dns', value })) });
    const authorizations = await client.getAuthorizations(order);
    const answered: AcmeAnswer[] = [];
    try {
      for (const authz of authorizations) {
        if (authz.status === 'valid') continue;
        const challenge = authz.challenges.find((c) => c.type === answerer.type);
        if (!challenge)
          throw new AcmeOrderError(`${authz.identifier.value}: the ACME server offers no ${answerer.type} challenge (it offers ${authz.challenges.map((c) => c.type).join(', ') || 'none'})`);
        const answer = await answerFor(answerer.type, authz, await client.getChallengeKeyAuthorization(challenge), challenge.token);
        await answerer.put(answer);
        answered.push(answer);
        await client.completeChallenge(challenge);
      }
      for (const authz of authorizations) {
        if (authz.status === 'valid') continue;
        try {
          await client.waitForValidStatus(authz);
        } catch (e) {
          throw new AcmeOrderError(`${authz.identifier.value}: validation failed: ${(await this.refusal(client, order, authz.identifier.value, answerer.type)) ?? (e as Error).message}`);
        }
      }
      const [key, csr] = await acme.crypto.createCsr({ commonName: domains[0], altNames: [...domains] }, await acme.crypto.createPrivateEcdsaKey('P-256'));
      const chain = acme.crypto.splitPemChain(await client.getCertificate(await client.finalizeOrder(order, csr)));
      const [leaf, ...intermediates] = chain;
      if (!leaf) throw new AcmeOrderError('the ACME server issued an empty certificate chain');
      const parsed = new X509Certificate(leaf);
      return {
        certificate: `${leaf.trim()}\n`,
        intermediates: intermediates.map((c) => `${c.trim()}\n`).join(''),
        privateKey: key.toString(),
        notBefore: new Date(parsed.validFrom).toISOString(),
        notAfter: new Date(parsed.validTo).toISOString(),
      };
    } finally {
      await Promise.all(answered.map((answer) => answerer.remove(answer).catch(() => undefined)));
    }
  }

  /** The problem the server recorded on the name's challenge, e.g. the connection it could not make. */
  private async refusal(client: acme.Client, order: acme.Order, name: string, type: AcmeChallengeType): Promise<string | null> {
    try {
      const authz = (await client.getAuthorizations(order)).find((a) => a.identifier.value === name);
      const problem = authz?.challenges.find((c) => c.type === type)?.error as { type?: string; detail?: string } | undefined;
      return problem ? `${problem.detail ?? ''}${problem.type ? ` (${problem.type})` : ''}`.trim() : null;
    } catch {
      return null;
    }
  }

  /** The account, registered (or found again by its key) at the first order of this process. */
  private account(): Promise<acme.Client> {
    this.client ??= (async () => {
      let key: Buffer;
      if (existsSync(this.accountKeyFile)) key = readFileSync(this.accountKeyFile);
      else {
        key = await acme.crypto.createPrivateEcdsaKey('P-256');
        await writeFile(this.accountKeyFile, key, { mode: 0o600, flag: 'wx' }).catch((e: NodeJS.ErrnoException) => {
          // Another housekeeper wrote it first: use that one.
          if (e.code !== 'EEXIST') throw e;
          key = readFileSync(this.accountKeyFile);
        });
      }
      const client = new acme.Client({ directoryUrl: this.settings.directoryUrl, accountKey: key, ...POLL });
      await client.createAccount({ termsOfServiceAgreed: true, ...(this.settings.email ? { contact: [`mailto:${this.settings.email}`] } : {}) });
      return client;
    })().catch((e: unknown) => {
      this.client = null;
      throw e;
    });
    return this.client;
  }
}

/** What the amphorae serve for one name's challenge: TLS-ALPN-01's self-signed certificate carries the key authorization's digest (RFC 8737 §3). */
async function answerFor(type: AcmeChallengeType, authz: acme.Authorization, keyAuthorization: string, token: string): Promise<AcmeAnswer> {
  if (type === 'http-01') return { type, token, keyAuthorization };
  const [key, certificate] = await acme.crypto.createAlpnCertificate(authz, keyAuthorization, await acme.crypto.createPrivateEcdsaKey('P-256'));
  return { type, name: authz.identifier.value, certificate: `${certificate.toString().trim()}\n${key.toString().trim()}\n` };
}
