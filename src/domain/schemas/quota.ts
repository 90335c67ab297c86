/** Request body of the quota resource. */
import { Type, Nullable, Patch, Strict } from '../schema-kit.js';
import { QUOTA_MAX, QUOTA_UNLIMITED } from '../defaults.js';

/** A limit: −1 unlimited, null "use the configured default". */
const Limit = () => Nullable(Type.Integer({ minimum: QUOTA_UNLIMITED, maximum: QUOTA_MAX }));

/** Both spellings of the two aliased keys are accepted, as Octavia does since Rocky. */
export const QuotaUpdateBody = Strict({
  quota: Patch({
    loadbalancer: Limit(),
    load_balancer: Limit(),
    listener: Limit(),
    member: Limit(),
    pool: Limit(),
    healthmonitor: Limit(),
    health_monitor: Limit(),
    l7policy: Limit(),
    l7rule: Limit(),
  }),
});
