/**
 * The names Octavia's controllers give their body argument (`def post(self, listener_)`), which
 * WSME puts in front of every unknown-attribute message: `Unknown attribute for argument
 * listener_.listener: bogus`. Keyed by the body's envelope; l7rule's PUT names it otherwise.
 */
const ARGUMENT_OF_ENVELOPE: Readonly<Record<string, string>> = {
  loadbalancer: 'load_balancer',
  listener: 'listener_',
  pool: 'pool_',
  member: 'member_',
  members: 'members_',
  healthmonitor: 'health_monitor_',
  l7policy: 'l7policy_',
  rule: 'rule_',
  flavor: 'flavor_',
  flavorprofile: 'flavor_profile_',
  availability_zone: 'availability_zone_',
  availability_zone_profile: 'availability_zone_profile_',
  quota: 'quotas',
};

export function octaviaArgumentName(envelope: string, method: string): string {
  if (envelope === 'rule' && method === 'PUT') return 'l7rule_';
  return ARGUMENT_OF_ENVELOPE[envelope] ?? envelope;
}
