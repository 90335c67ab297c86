/**
 * The clouds.yaml `ostia up` writes, so `openstack --os-cloud ostia loadbalancer list` works at
 * once. The password clouds log in through the embedded Keystone at `<publicUrl>/identity/v3`.
 */
import { Document } from 'yaml';
import type { Config } from '../config.js';
import { identityUrl } from './catalog.js';

/** [cloud, user, project]; a cloud whose user or project the config lacks is left out. */
const PASSWORD_CLOUDS: ReadonlyArray<[cloud: string, user: string, project: string]> = [
  ['ostia', 'admin', 'admin'],
  ['ostia-demo', 'demo', 'demo'],
  ['ostia-alt', 'alt', 'alt'],
  ['ostia-reader', 'demo-reader', 'demo'],
];

export function cloudsYaml(publicUrl: string, config: Config): string {
  const { users, projects, region, mode } = config.identity;
  const clouds: Record<string, unknown> = {};
  for (const [cloud, userName, projectName] of PASSWORD_CLOUDS) {
    const user = users.find((u) => u.name === userName);
    if (!user || !projects.some((p) => p.name === projectName)) continue;
    clouds[cloud] = {
      auth_type: 'password',
      auth: {
        auth_url: identityUrl(publicUrl),
        username: user.name,
        password: user.password,
        project_name: projectName,
        user_domain_name: 'Default',
        project_domain_name: 'Default',
      },
      identity_api_version: 3,
      region_name: region,
      interface: 'public',
    };
  }
  // Without Keystone the clients send every request, Neutron look-ups included, to `endpoint`.
  if (mode === 'noauth') clouds['ostia-noauth'] = { auth_type: 'none', auth: { endpoint: publicUrl } };

  const doc = new Document({ clouds });
  doc.commentBefore = ` Written by ostia for ${publicUrl}. Use: openstack --os-cloud ostia loadbalancer list`;
  return doc.toString();
}
