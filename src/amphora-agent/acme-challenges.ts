/**
 * The ACME HTTP-01 challenges this amphora answers on port 80 of its VIP (AmphoraConfig's
 * acmeHttp01): token → key authorization, in the map file haproxy.cfg names and, while HAProxy
 * runs, in HAProxy's memory (`set map` / `add map` / `del map`), so a challenge is served
 * without a reload. The file is written first, so a reload or a restarted agent serves the
 * same set; it exists from the agent's start, as HAProxy refuses a configuration naming a
 * missing map.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { AcmeChallenge } from '../domain/amphora-config.js';
import { writeFileAtomically } from './atomic-file.js';
import type { HaproxyRuntime } from './haproxy/runtime.js';

/** A few concurrent orders of a load balancer's listeners, a hundred names each at most. */
export const MAX_ACME_CHALLENGES = 1000;

export class AcmeChallengeError extends Error {}

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
    if (!this.entries.has(challenge.token) && this.entries.size >= MAX_ACME_CHALLENGES)
      throw new AcmeChallengeError(`this amphora answers ${MAX_ACME_CHALLENGES} challenges at most; remove finished ones first`);
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
