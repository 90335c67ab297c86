/**
 * A client of a running Ostia's public API, as an OpenStack user would hold one: logged in at Keystone with
 * a cloud of the clouds.yaml `ostia up` writes (DATA_DIR/clouds.yaml), the load-balancer and key-manager
 * endpoints taken from the token's catalog. The password is read from the file and sent to Keystone only.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { CliError, type Command, type Input } from './command.js';

interface CloudEntry {
  auth_type?: string;
  auth?: { auth_url?: string; username?: string; password?: string; project_name?: string; user_domain_name?: string; project_domain_name?: string };
  region_name?: string;
}

interface CatalogEntry {
  type: string;
  endpoints: Array<{ interface: string; region?: string; url: string }>;
}

const REQUEST_TIMEOUT_MS = 30_000;

/** How a command that calls the API logs in: a cloud of a clouds.yaml, and the endpoint if not the catalog's. */
export const apiLoginOptions = (defaultCloud: string, why: string): Command['options'] => ({
  'os-cloud': { type: 'string', value: 'CLOUD', help: `the cloud of clouds.yaml to log in with${why} (default ${defaultCloud})` },
  clouds: { type: 'string', value: 'FILE', help: 'the clouds.yaml to read (default DATA_DIR/clouds.yaml, which ostia up writes)' },
  url: { type: 'string', value: 'URL', help: "the service's Octavia endpoint (default: from the token's catalog)" },
});

export interface Reply {
  status: number;
  text: string;
}

export class Session {
  constructor(
    /** The Octavia endpoint, no trailing slash. */
    readonly url: string,
    /** The Barbican endpoint, or null when the catalog names none. */
    readonly keyManagerUrl: string | null,
    private readonly token: string,
  ) {}

  async request(method: string, urlOrPath: string, body?: unknown): Promise<Reply> {
    const url = urlOrPath.startsWith('http') ? urlOrPath : `${this.url}${urlOrPath}`;
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: { 'x-auth-token': this.token, accept: 'application/json', ...(body !== undefined && { 'content-type': 'application/json' }) },
        ...(body !== undefined && { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (e) {
      throw new CliError(`${method} ${url} failed: ${(e as Error).message}`, 'Check that the service runs (ostia up) and that --url or the clouds.yaml names it.');
    }
    return { status: res.status, text: await res.text() };
  }

  /** The parsed answer of a call that must succeed. */
  async json<T>(method: string, urlOrPath: string, body?: unknown): Promise<T> {
    const r = await this.request(method, urlOrPath, body);
    if (r.status >= 300) throw new CliError(`${method} ${urlOrPath} answered HTTP ${r.status}: ${r.text.slice(0, 300)}`, 'Check the service log for the reason; the cloud used must be an admin (the default cloud ostia is).');
    return (r.text ? JSON.parse(r.text) : undefined) as T;
  }
}

/** Logs in with cloud `cloud` of the clouds.yaml at `file`; `url` overrides the catalog's Octavia endpoint. */
export async function login(file: string, cloud: string, url?: string): Promise<Session> {
  let clouds: Record<string, CloudEntry>;
  try {
    clouds = (parseYaml(readFileSync(file, 'utf8')) as { clouds?: Record<string, CloudEntry> }).clouds ?? {};
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as Error).message}`, "Start the service with 'ostia up' on this --data-dir (it writes clouds.yaml), or pass --clouds FILE.");
  }
  const entry = clouds[cloud];
  const auth = entry?.auth;
  if (!entry || !auth?.auth_url || !auth.username || auth.password === undefined || !auth.project_name)
    throw new CliError(`${file} has no password cloud ${cloud} (it has ${Object.keys(clouds).join(', ') || 'none'})`, 'Pass --os-cloud with one of its password clouds; an admin one (ostia) can fail load balancers over.');
  const body = {
    auth: {
      identity: { methods: ['password'], password: { user: { name: auth.username, password: auth.password, domain: { name: auth.user_domain_name ?? 'Default' } } } },
      scope: { project: { name: auth.project_name, domain: { name: auth.project_domain_name ?? 'Default' } } },
    },
  };
  const tokensUrl = `${auth.auth_url.replace(/\/+$/, '')}/auth/tokens`;
  let res: Response;
  try {
    res = await fetch(tokensUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch (e) {
    throw new CliError(`cannot reach Keystone at ${tokensUrl}: ${(e as Error).message}`, "Start the service ('ostia up') with this --data-dir, or fix the cloud's auth_url.");
  }
  const token = res.headers.get('x-subject-token');
  if (res.status !== 201 || !token) throw new CliError(`Keystone at ${tokensUrl} refused cloud ${cloud}: HTTP ${res.status}`, `Check the credentials of cloud ${cloud} in ${file}.`);
  const catalog = ((await res.json()) as { token?: { catalog?: CatalogEntry[] } }).token?.catalog ?? [];
  const endpoint = (type: string) => catalog.find((c) => c.type === type)?.endpoints.find((e) => e.interface === 'public' && (!entry.region_name || e.region === entry.region_name))?.url.replace(/\/+$/, '') ?? null;
  const octavia = url?.replace(/\/+$/, '') ?? endpoint('load-balancer');
  if (!octavia) throw new CliError(`the token of cloud ${cloud} names no load-balancer endpoint`, 'Pass the service URL with --url.');
  return new Session(octavia, endpoint('key-manager'), token);
}

/** Logs in as apiLoginOptions say, the clouds.yaml by default that of `dataDir`. */
export function loginFromFlags(values: Input['values'], dataDir: string, defaultCloud: string): Promise<Session> {
  const text = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined);
  return login(text('clouds') ?? join(dataDir, 'clouds.yaml'), text('os-cloud') ?? defaultCloud, text('url'));
}
