/**
 * The KeyManager over a real Barbican: the service logs in to Keystone with its own
 * credentials (password, project-scoped) and reads with that token; whether a caller may use
 * a reference is Barbican's decision, asked with the caller's own token — which is why
 * `canRead` needs `caller.token` here. As with Octavia, the service user must be able to read
 * what it resolves: a read ACL granted to it, or a role in the owning project.
 */
import { ForeignReferenceError, MissingReferenceError } from './errors.js';
import type { Caller, CertificateParts, ConsumerRegistration, KeyManager, Material } from './key-manager.js';

/** Why an external Barbican takes no managed certificate: checked by the API before it would be asked. */
export const EXTERNAL_STORE_REFUSAL =
  "an external Barbican stores secrets in the project of the token that creates them, and Ostia holds no token of the listener's project when it renews: managed certificates (acme_domains) need keyManager.mode embedded";
import { containerConsumerUrl } from './views.js';

export interface ExternalSettings {
  /** Barbican's endpoint, without /v1. */
  url: string;
  authUrl: string;
  username: string;
  password: string;
  projectName: string;
  userDomainName: string;
  projectDomainName: string;
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const PARTS = ['certificate', 'private_key', 'intermediates', 'private_key_passphrase'];
const TOKEN_MARGIN_MS = 60_000;
const TIMEOUT_MS = 10_000;

export class BarbicanUnavailableError extends Error {}
/** Barbican said 401/403: the token's user may not do this. */
export class AccessRefusedError extends Error {}

export class ExternalKeyManager implements KeyManager {
  private readonly base: string;
  private token: Promise<{ id: string; expiresAt: number }> | null = null;

  constructor(
    private readonly settings: ExternalSettings,
    private readonly fetcher: typeof fetch = globalThis.fetch,
  ) {
    this.base = `${settings.url.replace(/\/+$/, '')}/v1`;
  }

  async resolveForService(ref: string): Promise<Material> {
    const { kind } = this.parse(ref);
    const token = await this.serviceToken();
    if (kind === 'secret') return { kind, ...(await this.payload(ref, token)) };
    const container = await this.json<{ secret_refs?: Array<{ name?: string | null; secret_ref: string }> }>(ref, token);
    const parts: Record<string, Buffer> = {};
    for (const member of container.secret_refs ?? [])
      if (member.name && PARTS.includes(member.name)) parts[member.name] = (await this.payload(member.secret_ref, token)).payload;
    if (!parts.certificate) throw new MissingReferenceError(`${ref} holds no 'certificate' secret`);
    return { kind, parts: parts as unknown as CertificateParts };
  }

  /** Reads as the caller would: the container and every payload in it, with the caller's token. */
  async canRead(caller: Caller, ref: string): Promise<boolean> {
    const { kind } = this.parse(ref);
    if (!caller.token) throw new BarbicanUnavailableError('an external key manager decides access with the caller\'s token, and none was given');
    try {
      if (kind === 'secret') {
        await this.payload(ref, caller.token);
        return true;
      }
      const container = await this.json<{ secret_refs?: Array<{ secret_ref: string }> }>(ref, caller.token);
      for (const member of container.secret_refs ?? []) await this.payload(member.secret_ref, caller.token);
      return true;
    } catch (e) {
      if (e instanceof MissingReferenceError || e instanceof AccessRefusedError) return false;
      throw e;
    }
  }

  async storeCertificate(): Promise<string> {
    throw new BarbicanUnavailableError(EXTERNAL_STORE_REFUSAL);
  }

  async deleteCertificate(): Promise<void> {
    throw new BarbicanUnavailableError(EXTERNAL_STORE_REFUSAL);
  }

  async registerConsumer(ref: string, consumer: ConsumerRegistration): Promise<void> {
    await this.consumers('POST', ref, consumer);
  }

  async unregisterConsumer(ref: string, consumer: ConsumerRegistration): Promise<void> {
    try {
      await this.consumers('DELETE', ref, consumer);
    } catch (e) {
      if (!(e instanceof MissingReferenceError)) throw e;
    }
  }

  private async consumers(method: string, ref: string, c: ConsumerRegistration): Promise<void> {
    const { kind } = this.parse(ref);
    const body = kind === 'secret' ? { service: c.service, resource_type: c.resourceType, resource_id: c.resourceId } : { name: c.service, URL: containerConsumerUrl(c) };
    await this.call(method, `${ref}/consumers`, await this.serviceToken(), { 'content-type': 'application/json', accept: 'application/json' }, JSON.stringify(body));
  }

  private parse(ref: string): { kind: 'secret' | 'container' } {
    const m = new RegExp(`^${escapeRegExp(this.base)}/(secrets|containers)/${UUID}/?$`).exec(ref);
    if (!m) throw new ForeignReferenceError(`'${ref}' is not a reference to the key manager at ${this.base}: expected ${this.base}/(secrets|containers)/<uuid>`);
    return { kind: m[1] === 'secrets' ? 'secret' : 'container' };
  }

  /** The payload in the type it was stored as (Barbican's `content_types.default`). */
  private async payload(ref: string, token: string): Promise<{ payload: Buffer; contentType: string }> {
    const meta = await this.json<{ content_types?: { default?: string } }>(ref, token);
    const contentType = meta.content_types?.default;
    if (!contentType) throw new MissingReferenceError(`${ref} refers to a secret that has no payload`);
    const res = await this.call('GET', `${ref.replace(/\/+$/, '')}/payload`, token, { accept: contentType });
    return { payload: Buffer.from(await res.arrayBuffer()), contentType };
  }

  private async json<T>(ref: string, token: string): Promise<T> {
    return (await (await this.call('GET', ref, token, { accept: 'application/json' })).json()) as T;
  }

  /** 404 → MissingReferenceError, 401/403 → AccessRefusedError, other failures name the status, never a payload. */
  private async call(method: string, url: string, token: string, headers: Record<string, string>, body?: string): Promise<Response> {
    let res: Response;
    try {
      res = await this.fetcher(url, { method, headers: { ...headers, 'x-auth-token': token }, body, signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch (e) {
      throw new BarbicanUnavailableError(`the key manager at ${this.base} is unreachable: ${(e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message}`);
    }
    if (res.ok) return res;
    const detail = await res.text().then(errorText, () => '');
    if (res.status === 404) throw new MissingReferenceError(`${url} does not exist`);
    if (res.status === 401 || res.status === 403) throw new AccessRefusedError(`the key manager refused ${method} ${url} (HTTP ${res.status}${detail})`);
    throw new BarbicanUnavailableError(`the key manager answered HTTP ${res.status} to ${method} ${url}${detail}`);
  }

  /** One login shared by concurrent callers, renewed a minute before it expires. */
  private async serviceToken(): Promise<string> {
    const current = this.token;
    const cached = current && (await current.catch(() => null));
    if (cached && cached.expiresAt - TOKEN_MARGIN_MS > Date.now()) return cached.id;
    if (this.token === current) this.token = this.login();
    return (await this.token!).id;
  }

  private async login(): Promise<{ id: string; expiresAt: number }> {
    const s = this.settings;
    const url = `${s.authUrl.replace(/\/+$/, '').replace(/\/v3$/, '')}/v3/auth/tokens?nocatalog`;
    const body = {
      auth: {
        identity: { methods: ['password'], password: { user: { name: s.username, password: s.password, domain: { name: s.userDomainName } } } },
        scope: { project: { name: s.projectName, domain: { name: s.projectDomainName } } },
      },
    };
    let res: Response;
    try {
      res = await this.fetcher(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch (e) {
      throw new BarbicanUnavailableError(`Keystone at ${s.authUrl} is unreachable: ${(e as Error).message}`);
    }
    const token = res.headers.get('x-subject-token');
    const answer = (await res.json().catch(() => ({}))) as { token?: { expires_at?: string } };
    if (res.status !== 201 || !token) throw new BarbicanUnavailableError(`the key manager's service user '${s.username}' could not log in to ${s.authUrl} (HTTP ${res.status})`);
    return { id: token, expiresAt: Date.parse(answer.token?.expires_at ?? '') || 0 };
  }
}

/** Barbican's `{title, description}`, as ": title: description" for a message. */
function errorText(text: string): string {
  try {
    const body = JSON.parse(text) as { title?: string; description?: string };
    return body.title ? `: ${body.title}${body.description ? `: ${body.description}` : ''}` : '';
  } catch {
    return '';
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
