/**
 * The provider advice on the live load balancers, as `ostia advise --from-live --json` prints it and
 * `GET /v2/ostia/advice` answers it: types alone (the dashboard reads them too).
 */
export type LiveVerdict = 'fits-ovn' | 'needs-amphora' | 'on-ovn' | 'no-data-plane';

export interface LiveRefusal {
  object: string;
  feature: string;
  value: string;
  reason: string;
}

export interface LiveAdvice {
  id: string;
  name: string;
  project_id: string;
  provider: string;
  /** The Kubernetes cluster CPO named in the description, or null. */
  cluster: string | null;
  amphorae: number;
  verdict: LiveVerdict;
  refusals: LiveRefusal[];
  explanation: string;
}

export interface LiveSummary {
  loadBalancers: LiveAdvice[];
  amphoraLoadBalancers: number;
  movable: number;
  amphoraeToday: number;
  amphoraeAfter: number;
  amphoraeSaved: number;
  explanation: string;
}
