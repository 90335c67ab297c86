/** A port of the embedded network service: VIPs and, later, amphora ports. */
export interface PortRecord {
  id: string;
  project_id: string;
  name: string;
  network_id: string;
  subnet_id: string;
  ip_address: string;
  device_id: string;
  device_owner: string;
  qos_policy_id: string | null;
  created_at: string;
}
