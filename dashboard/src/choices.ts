/**
 * The objects a form field may refer to, read from the API that holds them: a listener's
 * default pool from the load balancer's pools, a VIP subnet from the network service, a
 * certificate from Barbican (its name shown, its reference sent). Each list is read once
 * when the form opens; a field whose list cannot be read still takes a typed value.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, get, getAll, lbaas } from './api.js';
import { config } from './session.js';

export type Source = 'pools' | 'subnets' | 'networks' | 'flavors' | 'availability_zones' | 'providers' | 'qos_policies' | 'security_groups' | 'certificates';

export interface Choice {
  value: string;
  label: string;
  /** The option group it is listed under (Barbican's containers and secrets). */
  group?: string;
}

export interface ChoiceList {
  options?: Choice[];
  /** Why the list could not be read (the API's words). */
  error?: string;
}

export type Choices = Partial<Record<Source, ChoiceList>>;

const SOURCES: Record<string, Source> = {
  default_pool_id: 'pools',
  redirect_pool_id: 'pools',
  vip_subnet_id: 'subnets',
  subnet_id: 'subnets',
  vip_network_id: 'networks',
  flavor_id: 'flavors',
  availability_zone: 'availability_zones',
  provider: 'providers',
  vip_qos_policy_id: 'qos_policies',
  vip_sg_ids: 'security_groups',
};

/** Where a field's choices come from; every `…container_ref(s)` is a Barbican reference. */
export function sourceOf(name: string): Source | null {
  return SOURCES[name] ?? (/container_refs?$/.test(name) ? 'certificates' : null);
}

interface Named {
  id: string;
  name?: string | null;
}
const named = (o: Named, detail?: string | null): Choice => ({ value: o.id, label: `${o.name || o.id}${detail ? ` (${detail})` : ''}` });

/** Barbican pages with limit/offset and a total; 100 is its largest page. */
async function barbicanAll<T>(collection: string, signal: AbortSignal): Promise<T[]> {
  const out: T[] = [];
  for (;;) {
    const page = await get<Record<string, unknown> & { total: number }>(`${config.value!.keyManager}/${collection}?limit=100&offset=${out.length}`, signal);
    const rows = (page[collection] as T[] | undefined) ?? [];
    out.push(...rows);
    if (!rows.length || out.length >= page.total) return out;
  }
}

interface Container {
  container_ref: string;
  name: string | null;
  type: string;
}
interface Secret {
  secret_ref: string;
  name: string | null;
  secret_type: string;
}

const LOADERS: Record<Source, (signal: AbortSignal, loadbalancerId: string | null) => Promise<Choice[]>> = {
  pools: async (signal, lb) =>
    lb ? (await getAll<Named & { protocol: string }>(lbaas(`pools?loadbalancer_id=${lb}`), 'pools', signal)).map((p) => named(p, p.protocol)) : [],
  subnets: async (signal) => (await get<{ subnets: Array<Named & { cidr: string }> }>('/v2.0/subnets', signal)).subnets.map((s) => named(s, s.cidr)),
  networks: async (signal) => (await get<{ networks: Named[] }>('/v2.0/networks', signal)).networks.map((n) => named(n)),
  flavors: async (signal) =>
    (await getAll<Named & { enabled: boolean; description: string | null }>(lbaas('flavors'), 'flavors', signal)).filter((f) => f.enabled).map((f) => named(f, f.description)),
  availability_zones: async (signal) =>
    (await getAll<{ name: string; enabled: boolean; description: string | null }>(lbaas('availabilityzones'), 'availability_zones', signal))
      .filter((z) => z.enabled)
      .map((z) => ({ value: z.name, label: z.description ? `${z.name} (${z.description})` : z.name })),
  providers: async (signal) =>
    (await get<{ providers: Array<{ name: string; description: string }> }>(lbaas('providers'), signal)).providers.map((p) => ({ value: p.name, label: `${p.name} (${p.description})` })),
  qos_policies: async (signal) => (await get<{ policies: Named[] }>('/v2.0/qos/policies', signal)).policies.map((p) => named(p)),
  security_groups: async (signal) => (await get<{ security_groups: Named[] }>('/v2.0/security-groups', signal)).security_groups.map((g) => named(g)),
  certificates: async (signal) => {
    const [containers, secrets] = await Promise.all([barbicanAll<Container>('containers', signal), barbicanAll<Secret>('secrets', signal)]);
    const tail = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1);
    return [
      ...containers.map((c) => ({ value: c.container_ref, label: `${c.name || tail(c.container_ref)} (${c.type})`, group: 'Containers' })),
      ...secrets.map((s) => ({ value: s.secret_ref, label: `${s.name || tail(s.secret_ref)} (${s.secret_type})`, group: 'Secrets' })),
    ];
  },
};

/** The choices of `sources`, read once (again when the load balancer changes). */
export function useChoices(sources: readonly Source[], loadbalancerId: string | null): Choices {
  const [choices, setChoices] = useState<Choices>({});
  const key = [...new Set(sources)].sort().join(',');
  useEffect(() => {
    const ctl = new AbortController();
    setChoices({});
    for (const source of key ? (key.split(',') as Source[]) : []) {
      LOADERS[source](ctl.signal, loadbalancerId).then(
        (options) => setChoices((c) => ({ ...c, [source]: { options } })),
        (e: Error) => {
          if (e.name !== 'AbortError') setChoices((c) => ({ ...c, [source]: { error: e instanceof ApiError ? e.message : String(e) } }));
        },
      );
    }
    return () => ctl.abort();
  }, [key, loadbalancerId]);
  return choices;
}
