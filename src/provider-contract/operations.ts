/** The operations a job asks of a provider: one per change the API or the health manager makes. */
export const Operations = [
  'loadbalancer.create', 'loadbalancer.update', 'loadbalancer.delete', 'loadbalancer.failover',
  'listener.create', 'listener.update', 'listener.delete',
  'pool.create', 'pool.update', 'pool.delete',
  'member.create', 'member.update', 'member.delete', 'member.batch',
  'healthmonitor.create', 'healthmonitor.update', 'healthmonitor.delete',
  'l7policy.create', 'l7policy.update', 'l7policy.delete',
  'l7rule.create', 'l7rule.update', 'l7rule.delete',
  'amphora.failover', 'amphora.config', 'amphora.delete',
] as const;
export type Operation = (typeof Operations)[number];
