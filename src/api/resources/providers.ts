/** /lbaas/providers: the enabled providers, and what each accepts in flavor and AZ profiles (admin). */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import { authorize, type Resource } from '../../identity/policy.js';
import type { Capability, ProviderDriver } from '../../provider-contract/provider.js';
import { pickFields, fieldsOf } from '../listing.js';

type Query = Record<string, string | string[] | undefined>;

/** Exact-match filters as Octavia applies them: an empty value filters nothing. */
function matches(cap: Capability, query: Query): boolean {
  const want = (key: 'name' | 'description') => [query[key] ?? []].flat().at(-1);
  const name = want('name');
  const description = want('description');
  return (!name || cap.name === name) && (!description || cap.description === description);
}

export const providerRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  // Octavia ignores unknown query keys here (no filters, no paging): only `fields` applies.
  app.get('/providers', async (req) => {
    authorize(req.ctx, 'provider', 'get_all');
    const fields = fieldsOf(req);
    return { providers: deps.providers.list().map((p) => pickFields(p, fields)) };
  });

  const capabilities = (key: 'flavor_capabilities' | 'availability_zone_capabilities', policy: Resource, of: (driver: ProviderDriver) => readonly Capability[]) =>
    app.get<{ Params: { provider: string } }>(`/providers/:provider/${key}`, async (req) => {
      // Authorised before the provider is looked up, so non-admins learn nothing about providers.
      authorize(req.ctx, policy, 'get_all');
      const driver = deps.providers.get(req.params.provider);
      const query = req.query as Query;
      const fields = fieldsOf(req);
      return { [key]: of(driver).filter((c) => matches(c, query)).map((c) => pickFields({ name: c.name, description: c.description }, fields)) };
    });
  capabilities('flavor_capabilities', 'provider-flavor', (d) => d.flavorCapabilities());
  capabilities('availability_zone_capabilities', 'provider-availability-zone', (d) => d.availabilityZoneCapabilities());
};
