/**
 * The Octavia v2 calls the amphora benches make, against Ostia or (the lifecycle bench) the real
 * Octavia baseline alike: the one-call graph create of a full stack, waiting for it to settle, the
 * cascade delete, and Ostia's provisioning trace.
 */
import http from 'node:http';
import type { TraceEntry } from '../../src/controller/trace.js';

export interface Reply {
  status: number;
  text: string;
}

export class ApiClient {
  private readonly agent: http.Agent;

  constructor(
    readonly name: string,
    /** API root, no trailing slash. */
    readonly base: string,
    readonly headers: Readonly<Record<string, string>>,
    /**
     * false for the baseline's uwsgi `http-socket`, which closes every connection after one response
     * without saying so (see bench/api.ts): a reused socket would fail with "socket hang up".
     */
    readonly keepAlive: boolean,
  ) {
    this.agent = new http.Agent({ keepAlive, maxSockets: keepAlive ? 8 : Infinity });
  }

  request(method: string, path: string, body?: unknown, timeoutMs = 30_000): Promise<Reply> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string | number> = { accept: 'application/json', ...this.headers };
    if (!this.keepAlive) headers.connection = 'close';
    if (payload) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
    return new Promise((resolve, reject) => {
      const req = http.request(`${this.base}${path}`, { method, agent: this.agent, headers, timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const r = await this.request(method, path, body);
    if (r.status >= 300) throw new Error(`${this.name}: ${method} ${path}: HTTP ${r.status} ${r.text.slice(0, 500)}`);
    // A DELETE answers 204 with no body.
    return (r.text ? JSON.parse(r.text) : undefined) as T;
  }

  close(): void {
    this.agent.destroy();
  }
}

/** The running Octavia baseline at `base`, or undefined: probed with one GET, never started from here. */
export async function probeOctavia(base: string, project: string): Promise<ApiClient | undefined> {
  const api = new ApiClient('Octavia 11', base, { 'x-project-id': project }, false);
  try {
    const probe = await api.request('GET', '/v2/lbaas/providers', undefined, 3000);
    if (probe.status === 200 && probe.text.includes('providers')) return api;
  } catch {
    // nothing listens there, or it does not answer in time
  }
  api.close();
  return undefined;
}

export interface StackSpec {
  provider: string;
  vipSubnetId: string;
  memberSubnetId: string;
  listenerPort: number;
  members: ReadonlyArray<{ address: string; port: number }>;
  /** A flavor of the load balancer (ACTIVE_STANDBY is one); the provider's default topology without. */
  flavorId?: string;
}

/** LB, HTTP listener, named pool (a graph create requires the name), the members, an HTTP monitor. */
export function graphBody(name: string, s: StackSpec): unknown {
  return {
    loadbalancer: {
      name,
      vip_subnet_id: s.vipSubnetId,
      provider: s.provider,
      ...(s.flavorId ? { flavor_id: s.flavorId } : {}),
      listeners: [
        {
          name: `${name}-http`,
          protocol: 'HTTP',
          protocol_port: s.listenerPort,
          default_pool: {
            name: `${name}-pool`,
            protocol: 'HTTP',
            lb_algorithm: 'ROUND_ROBIN',
            healthmonitor: { type: 'HTTP', delay: 1, timeout: 1, max_retries: 1 },
            members: s.members.map((m) => ({ address: m.address, protocol_port: m.port, subnet_id: s.memberSubnetId })),
          },
        },
      ],
    },
  };
}

export interface LoadBalancerView {
  id: string;
  provisioning_status: string;
  operating_status: string;
  vip_address: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls GET every `pollMs` until the LB is no longer PENDING_*; throws after `timeoutMs`. */
export async function waitSettled(api: ApiClient, id: string, pollMs: number, timeoutMs: number): Promise<LoadBalancerView> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const { loadbalancer } = await api.json<{ loadbalancer: LoadBalancerView }>('GET', `/v2/lbaas/loadbalancers/${id}`);
    if (!loadbalancer.provisioning_status.startsWith('PENDING_')) return loadbalancer;
    if (performance.now() > deadline) throw new Error(`${api.name}: load balancer ${id} still ${loadbalancer.provisioning_status} after ${timeoutMs} ms`);
    await sleep(pollMs);
  }
}

export interface Created {
  lb: LoadBalancerView;
  /** Date.now() when the POST was sent, to place trace timestamps against. */
  postedAt: number;
  postMs: number;
  /** POST sent → provisioning_status ACTIVE seen. */
  activeMs: number;
}

export async function createStack(api: ApiClient, name: string, spec: StackSpec, pollMs: number, timeoutMs: number): Promise<Created> {
  const postedAt = Date.now();
  const t0 = performance.now();
  const posted = await api.json<{ loadbalancer: LoadBalancerView }>('POST', '/v2/lbaas/loadbalancers', graphBody(name, spec));
  const postMs = performance.now() - t0;
  const lb = await waitSettled(api, posted.loadbalancer.id, pollMs, timeoutMs);
  const activeMs = performance.now() - t0;
  if (lb.provisioning_status !== 'ACTIVE') {
    const reason = await api.request('GET', `/v2/lbaas/loadbalancers/${lb.id}/trace`).then((r) => (r.status === 200 ? (JSON.parse(r.text) as { status_reason: string | null }).status_reason : null), () => null);
    throw new Error(`${api.name}: load balancer ${lb.id} went to ${lb.provisioning_status}${reason ? `: ${reason}` : ''}`);
  }
  return { lb, postedAt, postMs, activeMs };
}

/**
 * Cascade delete, then GET until 404; resolves with the time that took. A 409 (the LB is still
 * PENDING_*) is retried until the deadline.
 */
export async function deleteStack(api: ApiClient, id: string, pollMs: number, timeoutMs: number): Promise<number> {
  const t0 = performance.now();
  const deadline = t0 + timeoutMs;
  for (;;) {
    const r = await api.request('DELETE', `/v2/lbaas/loadbalancers/${id}?cascade=true`);
    if (r.status === 204 || r.status === 404) break;
    if (r.status !== 409 || performance.now() > deadline) throw new Error(`${api.name}: DELETE load balancer ${id}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
    await sleep(pollMs);
  }
  for (;;) {
    const r = await api.request('GET', `/v2/lbaas/loadbalancers/${id}`);
    if (r.status === 404) return performance.now() - t0;
    if (performance.now() > deadline) throw new Error(`${api.name}: load balancer ${id} not deleted after ${timeoutMs} ms (HTTP ${r.status})`);
    await sleep(pollMs);
  }
}

/** Ostia's provisioning trace (GET /v2/lbaas/loadbalancers/{id}/trace): its rows as src/controller/trace.ts reads them. */
export async function readTrace(api: ApiClient, lbId: string): Promise<TraceEntry[]> {
  return (await api.json<{ trace: TraceEntry[] }>('GET', `/v2/lbaas/loadbalancers/${lbId}/trace`)).trace;
}

/** A trace timestamp as epoch milliseconds. */
export function traceTime(naiveUtc: string): number {
  return Date.parse(`${naiveUtc}Z`);
}

/** The jobs of a trace in the order they started, each with its steps. */
export function traceJobs(trace: readonly TraceEntry[]): Array<{ jobId: string; operation: string; steps: TraceEntry[] }> {
  const jobs = new Map<string, { jobId: string; operation: string; steps: TraceEntry[] }>();
  for (const s of trace) {
    let job = jobs.get(s.job_id);
    if (!job) jobs.set(s.job_id, (job = { jobId: s.job_id, operation: s.operation, steps: [] }));
    job.steps.push(s);
  }
  return [...jobs.values()];
}
